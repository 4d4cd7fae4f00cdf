// Words of a name, lower-cased, in order, without repeats: a loop and a regexp, as real helpers have.
exports.words = function (text) {
  var re = /[A-Za-z\u0400-\u04FF'-]+/g, seen = {}, out = [], m;
  while ((m = re.exec(String(text))) !== null) {
    var w = m[0].toLowerCase();
    if (w.length > 1 && !seen[w]) {
      seen[w] = true;
      out.push(w);
    }
  }
  return out;
};
