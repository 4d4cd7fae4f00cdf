function (doc) {
  var util = require('views/lib/util');
  var s1 = doc.step_1;
  if (!s1) return;
  var words = util.words([s1.lastname, s1.firstname, s1.middlename].join(' '));
  for (var i = 0; i < words.length; i++) {
    emit(words[i], words.length);
  }
}
