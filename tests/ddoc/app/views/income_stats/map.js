// one row per numeric income item: key objectType, value its size (reduced by _stats)
function (doc) {
  var items = (doc.step_11 && typeof doc.step_11 === "object") ? doc.step_11 : {};
  for (var k in items) {
    var it = items[k];
    if (it && typeof it === "object" && typeof it.sizeIncome === "number") {
      emit(it.objectType || "unknown", it.sizeIncome);
    }
  }
}
