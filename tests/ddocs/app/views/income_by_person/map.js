function (doc) {
  var incomes = doc.step_11;
  if (!incomes) return;
  for (var k in incomes) {
    var item = incomes[k];
    if (item && typeof item.sizeIncome === 'number') {
      emit([item.person === '1' ? 'declarant' : 'family', item.objectType || 'other'], item.sizeIncome);
    }
  }
}
