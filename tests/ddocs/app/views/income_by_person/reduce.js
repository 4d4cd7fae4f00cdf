function (keys, values, rereduce) {
  var out = {count: 0, total: 0, max: null};
  for (var i = 0; i < values.length; i++) {
    var v = values[i];
    if (rereduce) {
      out.count += v.count;
      out.total += v.total;
      if (v.max !== null && (out.max === null || v.max > out.max)) out.max = v.max;
    } else {
      out.count += 1;
      out.total += v;
      if (out.max === null || v > out.max) out.max = v;
    }
  }
  return out;
}
