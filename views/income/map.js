// dragnet: language=javascript
function (doc) {
  var s0 = doc.step_0;
  if (!s0 || typeof s0 !== "object" || s0.declarationType !== "1" ||
      Object.prototype.hasOwnProperty.call(s0, "changesYear")) {
    return;
  }
  var s1 = (doc.step_1 && typeof doc.step_1 === "object") ? doc.step_1 : {};
  var incomes = (doc.step_11 && typeof doc.step_11 === "object") ? doc.step_11 : {};
  var declSalary = 0, declTotal = 0, famSalary = 0, famTotal = 0;
  for (var key in incomes) {
    if (!Object.prototype.hasOwnProperty.call(incomes, key)) continue;
    var item = incomes[key];
    if (item === null || typeof item !== "object") continue;
    var size = typeof item.sizeIncome === "number" ? item.sizeIncome : 0;
    var salary = item.objectType === "salarymain";
    if (item.person === "1") {
      declTotal += size;
      if (salary) declSalary += size;
    } else {
      famTotal += size;
      if (salary) famSalary += size;
    }
  }
  emit(doc._id, {
    FIO: s1.lastname + " " + s1.firstname + " " + s1.middlename,
    workPost: s1.workPost,
    workPlace: s1.workPlace,
    decl_year: s0.declarationYear1,
    declarant_salary: declSalary,
    declarant_total: declTotal,
    family_salary: famSalary,
    family_total: famTotal
  });
}
