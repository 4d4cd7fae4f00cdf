function (doc) {
  var s0 = doc.step_0, incomes = doc.step_11, total = 0;
  if (!s0 || s0.declarationType !== '1' || !incomes) return;
  for (var k in incomes) {
    var size = incomes[k] && incomes[k].sizeIncome;
    if (typeof size === 'number') total += size;
  }
  emit(s0.declarationYear1, total);
}
