function (doc) {
  var util = require("views/lib/util");
  var s1 = doc.step_1;
  if (!s1 || typeof s1 !== "object") return;
  var words = util.words(s1.workPlace);
  for (var i = 0; i < words.length; i++) {
    emit(words[i], 1);
  }
}
