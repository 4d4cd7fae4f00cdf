function (doc) {
  var s0 = doc.step_0;
  if (!s0 || typeof s0 !== "object") return;
  var items = (doc.step_11 && typeof doc.step_11 === "object") ? doc.step_11 : {};
  var total = 0;
  for (var k in items) {
    var it = items[k];
    if (it && typeof it === "object" && typeof it.sizeIncome === "number") total += it.sizeIncome;
  }
  emit([s0.declarationYear1 || null, s0.declarationType || null], total);
}
