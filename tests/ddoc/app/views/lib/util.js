// lower-cased words of at least 3 letters (any script), each once, in order of appearance
exports.words = function (text) {
  if (typeof text !== "string") return [];
  var parts = text.toLowerCase().split(/[^0-9a-z\u0400-\u04ff]+/);
  var seen = {}, out = [];
  for (var i = 0; i < parts.length; i++) {
    var w = parts[i];
    if (w.length >= 3 && !seen.hasOwnProperty(w)) {
      seen[w] = true;
      out.push(w);
    }
  }
  return out;
};
