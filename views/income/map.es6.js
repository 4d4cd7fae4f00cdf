// dragnet: language=javascript
(doc) => {
  const s0 = doc.step_0;
  if (!s0 || typeof s0 !== "object" || s0.declarationType !== "1" ||
      Object.prototype.hasOwnProperty.call(s0, "changesYear")) {
    return;
  }
  const { lastname, firstname, middlename, workPost, workPlace } =
    (doc.step_1 && typeof doc.step_1 === "object") ? doc.step_1 : {};
  const incomes = (doc.step_11 && typeof doc.step_11 === "object") ? doc.step_11 : {};
  const sums = { declarant_salary: 0, declarant_total: 0, family_salary: 0, family_total: 0 };
  for (const item of Object.values(incomes)) {
    if (item === null || typeof item !== "object") continue;
    const { person, objectType, sizeIncome } = item;
    const size = typeof sizeIncome === "number" ? sizeIncome : 0;
    const who = person === "1" ? "declarant" : "family";
    sums[`${who}_total`] += size;
    if (objectType === "salarymain") sums[`${who}_salary`] += size;
  }
  emit(doc._id, {
    FIO: `${lastname} ${firstname} ${middlename}`,
    workPost,
    workPlace,
    decl_year: s0.declarationYear1,
    declarant_salary: sums.declarant_salary,
    declarant_total: sums.declarant_total,
    family_salary: sums.family_salary,
    family_total: sums.family_total
  });
}
