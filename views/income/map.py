# dragnet: language=python
def fun(doc):
    s0 = doc.get('step_0')
    if not isinstance(s0, dict) or s0.get('declarationType') != '1' or 'changesYear' in s0:
        return
    s1 = doc.get('step_1')
    if not isinstance(s1, dict):
        s1 = {}
    incomes = doc.get('step_11')
    if not isinstance(incomes, dict):
        incomes = {}
    decl_salary = decl_total = fam_salary = fam_total = 0
    for item in incomes.values():
        if not isinstance(item, dict):
            continue
        size = item.get('sizeIncome')
        if isinstance(size, bool) or not isinstance(size, (int, float)):
            size = 0
        salary = item.get('objectType') == 'salarymain'
        if item.get('person') == '1':
            decl_total += size
            if salary:
                decl_salary += size
        else:
            fam_total += size
            if salary:
                fam_salary += size
    yield doc['_id'], {
        'FIO': '%s %s %s' % (s1.get('lastname'), s1.get('firstname'), s1.get('middlename')),
        'workPost': s1.get('workPost'),
        'workPlace': s1.get('workPlace'),
        'decl_year': s0.get('declarationYear1'),
        'declarant_salary': decl_salary,
        'declarant_total': decl_total,
        'family_salary': fam_salary,
        'family_total': fam_total,
    }
