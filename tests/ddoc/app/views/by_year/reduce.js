// map values are numbers; partial results are {n, total, max}: rereduce combines those
function (keys, values, rereduce) {
  var out = {n: 0, total: 0, max: null};
  for (var i = 0; i < values.length; i++) {
    var v = values[i];
    if (rereduce) {
      out.n += v.n;
      out.total += v.total;
      if (v.max !== null && (out.max === null || v.max > out.max)) out.max = v.max;
    } else {
      out.n += 1;
      out.total += v;
      if (out.max === null || v > out.max) out.max = v;
    }
  }
  return out;
}
