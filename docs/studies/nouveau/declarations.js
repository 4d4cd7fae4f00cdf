// dragnet: nouveau index of declarations: names and workplace as text, type and year as strings, income as a double
function (doc) {
  var s0 = doc.step_0, s1 = doc.step_1;
  if (!s0 || typeof s0 !== "object" || !s1 || typeof s1 !== "object") return;
  var name = [s1.lastname, s1.firstname, s1.middlename].join(" ");
  index("text", "name", name);
  if (typeof s1.workPlace === "string") index("text", "workplace", s1.workPlace);
  if (typeof s1.workPost === "string") index("string", "post", s1.workPost);
  index("string", "type", String(s0.declarationType));
  if (typeof s0.declarationYear1 === "string") index("string", "year", s0.declarationYear1);
  var incomes = (doc.step_11 && typeof doc.step_11 === "object") ? doc.step_11 : {};
  var total = 0;
  for (var key in incomes) {
    var item = incomes[key];
    if (item && typeof item === "object" && typeof item.sizeIncome === "number") total += item.sizeIncome;
  }
  index("double", "income", total);
}
