"""Synthetic declarations shaped like the public Ukrainian NACP asset declarations.

The 2017 study indexed 290,406 real declarations (≈16 KB each). This generator reproduces their shape
(sections `step_0` … `step_17`, item objects keyed by item id, numbers as strings with comma decimals,
confidential markers, Ukrainian texts) and their size distribution (see TARGET below), deterministically
from a seed: the same seed gives byte-identical output.

Speed matters (millions of documents for a load test; target ≥ 5,000 docs per CPU-second, see
benchmarks/generate_speed): item templates are built and serialised to UTF-8 once per run, and each
document is assembled as bytes from those fragments plus a few per-item fields (id, person, amount), with
`rng.random()` indexing instead of `rng.choice`; a document's size is steered by drawing a target size and
adding items (whose serialised sizes are known) until it is reached. Normalised output uses fragments
normalised once, so it costs no json.loads/normalise/json.dumps per document, yet equals exactly that.
`declarations()` parses the text, so dicts and files always agree.
"""

from __future__ import annotations

import json
import queue
import random
import threading
from bisect import bisect_right
from dataclasses import dataclass
from typing import IO, Callable, Iterator

from .normalise import normalise, short_id

# Recorded shape of the real-study sample (shared/fixtures/README.md, "The data"), in bytes.
TARGET = {"mean": 16519, "median": 15334, "p90": 19640, "p99": 48050, "max": 282547, "items": 32,
          "type1_share": 0.851, "changes_share_of_type1": 2054 / 34038}

CONFIDENTIAL = "[Конфіденційна інформація]"
UNKNOWN = "Не відомо"
NOT_APPLICABLE = "[Не застосовується]"
EMPTY_SECTION = {"empty": "Об'єкт декларування відсутній"}

LASTNAMES = ["Шевченко", "Коваленко", "Бондаренко", "Ткаченко", "Кравченко", "Олійник", "Шевчук", "Поліщук",
             "Коваль", "Бойко", "Мельник", "Лисенко", "Руденко", "Савченко", "Петренко", "Марченко",
             "Мороз", "Кравчук", "Козак", "Павленко", "Гончаренко", "Левченко", "Литвиненко", "Іваненко"]
FIRSTNAMES = ["Олександр", "Сергій", "Володимир", "Андрій", "Микола", "Іван", "Юрій", "Олег", "Віктор",
              "Олена", "Наталія", "Тетяна", "Ірина", "Оксана", "Світлана", "Людмила", "Марія", "Галина"]
MIDDLENAMES = ["Олександрович", "Сергійович", "Володимирович", "Миколаївна", "Іванівна", "Петрович",
               "Василівна", "Андрійович", "Михайлівна", "Юрійович", "Вікторівна", "Григорович"]
POSTS = ["головний спеціаліст", "начальник відділу", "суддя", "депутат", "заступник начальника управління",
         "прокурор", "старший інспектор", "директор департаменту", "провідний спеціаліст", "голова",
         "секретар ради", "начальник сектору", "слідчий", "державний виконавець", "завідувач сектору"]
PLACES = ["Київська міська рада", "Головне управління ДФС у Львівській області", "Господарський суд м. Києва",
          "Одеська обласна державна адміністрація", "Прокуратура Харківської області",
          "Національна поліція України", "Міністерство юстиції України", "Дніпровська районна у м. Києві "
          "державна адміністрація", "Вінницька обласна рада", "Державна служба України з надзвичайних ситуацій",
          "Апеляційний суд Полтавської області", "Управління Державної казначейської служби у м. Житомирі"]
CITIES = ["Київ / Україна", "Львів / Львівська область / Україна", "Харків / Харківська область / Україна",
          "Одеса / Одеська область / Україна", "Дніпро / Дніпропетровська область / Україна",
          "Вінниця / Вінницька область / Україна", "Бровари / Броварський район / Київська область / Україна",
          "Полтава / Полтавська область / Україна", "Житомир / Житомирська область / Україна"]
ESTATE_TYPES = ["Квартира", "Житловий будинок", "Земельна ділянка", "Гараж", "Садовий (дачний) будинок",
                "Кімната", "Інше"]
VEHICLE_TYPES = ["Автомобіль легковий", "Мотоцикл (мопед)", "Автомобіль вантажний", "Причіп", "Водний засіб"]
BRANDS = [("Toyota", "Camry"), ("Volkswagen", "Passat"), ("Skoda", "Octavia"), ("ВАЗ", "2107"),
          ("Renault", "Logan"), ("Hyundai", "Tucson"), ("Mercedes-Benz", "E 200"), ("Daewoo", "Lanos"),
          ("Mitsubishi", "Outlander"), ("ЗАЗ", "Sens"), ("BMW", "X5"), ("Lexus", "RX 350")]
INCOME_TYPES = ["Заробітна плата отримана за основним місцем роботи", "salarymain",
                "Заробітна плата отримана за сумісництвом", "Дохід від надання майна в оренду (користування)",
                "Подарунок у грошовій формі", "Подарунок у негрошовій формі", "Дивіденди", "Проценти",
                "Пенсія", "Соціальна допомога", "Спадщина", "Дохід від відчуження нерухомого майна",
                "Благодійна допомога", "Інше"]
INCOME_SOURCES = ["Київська міська рада", "ПАТ КБ \"ПриватБанк\"", "Пенсійний фонд України",
                  "ТОВ \"Агро-Союз\"", "Національна поліція України", "ПАТ \"Укрзалізниця\"",
                  "Державна фіскальна служба України", "ФОП Петренко О.В."]
BANKS = ["ПАТ КБ \"ПриватБанк\"", "АТ \"Ощадбанк\"", "ПАТ \"Райффайзен Банк Аваль\"", "АТ \"Укрексімбанк\"",
         "ПАТ \"ПУМБ\"", "АТ \"Укрсиббанк\""]
CURRENCIES = ["UAH", "USD", "EUR", "UAH", "UAH"]
ASSET_TYPES = ["Готівкові кошти", "Кошти, розміщені на банківських рахунках", "Внески до кредитних спілок",
               "Кошти, позичені третім особам"]
LIABILITY_TYPES = ["Кредит", "Позика", "Зобов'язання за договорами лізингу", "Інше"]
RELATIONS = ["чоловік", "дружина", "син", "донька", "мати", "батько", "особи, які спільно проживають"]
OWNERSHIP = ["Власність", "Спільна сумісна власність", "Спільна часткова власність", "Оренда",
             "Інше право користування"]
MOVABLES = ["Ювелірні вироби", "Твори мистецтва (картини тощо)", "Колекція годинників", "Зброя"]
CORP = ["ТОВ \"Будінвест\"", "ПП \"Агросвіт\"", "ТОВ \"Енергоресурс\"", "ПрАТ \"Київміськбуд\""]

ITEM_SECTIONS = tuple(f"step_{n}" for n in range(2, 18))
# How often each item section receives an item when a document is filled up (≈ the real mix).
SECTION_WEIGHTS = {"step_2": 0, "step_3": 15, "step_4": 1, "step_5": 2, "step_6": 8, "step_7": 2, "step_8": 2,
                   "step_9": 1, "step_10": 1, "step_11": 30, "step_12": 14, "step_13": 7, "step_14": 5,
                   "step_15": 3, "step_16": 3, "step_17": 8}
# Sections that are sometimes written as a JSON list instead of an object keyed by item id.
LIST_SECTIONS = ("step_2", "step_5", "step_9", "step_10", "step_14", "step_15", "step_16", "step_17")
POOL_SIZE = 48


def _money(value: float) -> str:
    """A NACP-style amount: '12 345,67' (space thousands, comma decimals)."""
    return f"{value:,.2f}".replace(",", " ").replace(".", ",")


def money(rng: random.Random, lo: float, hi: float) -> str:
    return _money(rng.uniform(lo, hi))


def _date(rng: random.Random, y0: int = 1985, y1: int = 2016) -> str:
    return f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.{rng.randint(y0, y1)}"


def _rights(rng: random.Random, person: str = "1") -> dict:
    own = rng.choice(OWNERSHIP)
    right = {"ownershipType": own, "otherOwnership": "",
             "percent-ownership": "100" if own == "Власність" else rng.choice(["50", "25", "33,33", ""]),
             "rightBelongs": person, "citizen": "Громадянин України"}
    rights = {"1": right}
    if rng.random() < 0.2:  # a co-owner outside the family
        rights["2"] = dict(right, rightBelongs="j", ua_lastname=rng.choice(LASTNAMES),
                           ua_firstname=rng.choice(FIRSTNAMES), ua_middlename=rng.choice(MIDDLENAMES))
    return rights


def _address(rng: random.Random) -> dict:
    return {"country": "1", "cityPath": rng.choice(CITIES), "ua_street": CONFIDENTIAL}


# One builder per item section: a template item (everything but the per-document fields).
def _estate(rng: random.Random) -> dict:
    item = {"objectType": rng.choice(ESTATE_TYPES), "otherObjectType": "", "owningDate": _date(rng),
            "totalArea": rng.choice([f"{rng.randint(12, 180)},{rng.randint(0, 9)}", str(rng.randint(20, 2500))]),
            "costDate": rng.choice([money(rng, 5000, 900000), money(rng, 5000, 900000), UNKNOWN]),
            "costAssessment": rng.choice(["", NOT_APPLICABLE])}
    item.update(_address(rng))
    item["rights"] = _rights(rng)
    return item


def _unfinished(rng: random.Random) -> dict:
    item = {"objectType": rng.choice(ESTATE_TYPES[:3]), "totalArea": f"{rng.randint(40, 300)},0",
            "costDate": rng.choice([money(rng, 10000, 500000), UNKNOWN]), "owningDate": _date(rng, 2005),
            "belongsTo": rng.choice(["1", "j"]), "land_ownershipType": rng.choice(OWNERSHIP)}
    item.update(_address(rng))
    return item


def _movable(rng: random.Random) -> dict:
    return {"objectType": rng.choice(MOVABLES), "trademark": "", "propertyDescr": "опис предмета",
            "dateUse": _date(rng, 1995), "costDateUse": money(rng, 2000, 300000),
            "manufacturerName": "", "acqBeforeFirstDecl": "", "rights": _rights(rng)}


def _vehicle(rng: random.Random) -> dict:
    brand, model = rng.choice(BRANDS)
    return {"objectType": rng.choice(VEHICLE_TYPES), "otherObjectType": "", "brand": brand, "model": model,
            "graduationYear": str(rng.randint(1985, 2016)), "owningDate": _date(rng, 1995),
            "costDate": rng.choice([money(rng, 8000, 900000), NOT_APPLICABLE]),
            "objectNumber": CONFIDENTIAL, "rights": _rights(rng)}


def _securities(rng: random.Random) -> dict:
    return {"typeProperty": rng.choice(["Акції", "Облігації", "Інвестиційні сертифікати"]),
            "emitent": rng.choice(CORP), "emitent_type": "1", "amount": str(rng.randint(1, 5000)),
            "cost": money(rng, 100, 200000), "owningDate": _date(rng, 2000), "rights": _rights(rng)}


def _corporate(rng: random.Random) -> dict:
    return {"name": rng.choice(CORP), "country": "1", "corporate_code": str(rng.randint(10**7, 10**8 - 1)),
            "legalForm": "Товариство з обмеженою відповідальністю", "cost": money(rng, 1000, 500000),
            "cost_percent": rng.choice(["100", "50", "25", "10"]), "en_name": "", "en_address": "",
            "rights": _rights(rng)}


def _entity(rng: random.Random) -> dict:
    return {"name": rng.choice(CORP), "beneficial_owner_company_code": str(rng.randint(10**7, 10**8 - 1)),
            "country": "1", "legalForm": "Приватне підприємство", "address": CONFIDENTIAL}


def _intangible(rng: random.Random) -> dict:
    return {"objectType": "Авторське право", "descriptionObject": "Авторське право на твір",
            "owningDate": _date(rng, 2000), "costDate": rng.choice([money(rng, 100, 50000), NOT_APPLICABLE]),
            "rights": _rights(rng)}


def _income(rng: random.Random) -> dict:
    return {"objectType": rng.choice(INCOME_TYPES), "otherObjectType": "",
            "source_citizen": rng.choice(["Юридична особа, зареєстрована в Україні", "Фізична особа",
                                          "Юридична особа, зареєстрована в Україні"]),
            "source_ua_company_name": rng.choice(INCOME_SOURCES),
            "source_ua_company_code": str(rng.randint(10**7, 10**8 - 1)), "incomeSource": "j",
            "sizeIncome": "0"}


def _monetary(rng: random.Random) -> dict:
    return {"objectType": rng.choice(ASSET_TYPES), "otherObjectType": "", "assetsCurrency": rng.choice(CURRENCIES),
            "sizeAssets": money(rng, 100, 500000), "organization_type": "1",
            "debtor_ua_company_name": rng.choice(BANKS), "rights": _rights(rng)}


def _liability(rng: random.Random) -> dict:
    return {"objectType": rng.choice(LIABILITY_TYPES), "otherObjectType": "", "currency": rng.choice(CURRENCIES),
            "sizeObligation": money(rng, 1000, 800000), "dateOrigin": _date(rng, 2005),
            "emitent_ua_company_name": rng.choice(BANKS), "emitent_ua_company_code": str(rng.randint(10**7, 10**8 - 1)),
            "guarantor": "", "guarantor_realty": "", "margin-emitent": ""}


def _expenditure(rng: random.Random) -> dict:
    return {"type": "1", "specExpenses": rng.choice(["Придбання автомобіля", "Придбання квартири", "Навчання"]),
            "costAmount": money(rng, 50000, 2000000), "date_costAmount": _date(rng, 2015),
            "specOtherExpenses": "", "country": "1"}


def _job(rng: random.Random) -> dict:
    return {"description": rng.choice(["Викладацька діяльність", "Наукова діяльність", "Юридичні послуги"]),
            "paid": "Оплачувана", "emitent_ua_company_name": rng.choice(PLACES), "emitent_type": "1",
            "emitent_ua_company_code": str(rng.randint(10**7, 10**8 - 1))}


def _membership(rng: random.Random) -> dict:
    return {"objType": "Громадське об'єднання", "objName": rng.choice(["Спілка юристів України",
                                                                       "Асоціація правників України",
                                                                       "Федерація футболу"]),
            "country": "1", "objBodyType": "Правління", "reestrCode": str(rng.randint(10**7, 10**8 - 1))}


def _account(rng: random.Random) -> dict:
    return {"establishment_ua_company_name": rng.choice(BANKS), "establishment_type": "1",
            "establishment_code": str(rng.randint(10**7, 10**8 - 1)), "country": "1",
            "accountNumber": CONFIDENTIAL}


BUILDERS: dict[str, Callable[[random.Random], dict]] = {
    "step_3": _estate, "step_4": _unfinished, "step_5": _movable, "step_6": _vehicle, "step_7": _securities,
    "step_8": _corporate, "step_9": _entity, "step_10": _intangible, "step_11": _income, "step_12": _monetary,
    "step_13": _liability, "step_14": _expenditure, "step_15": _job, "step_16": _membership, "step_17": _account,
}


def _frag(obj: dict, normalised: bool = False) -> bytes:
    """The members of obj as UTF-8 JSON without the braces: b'"a": "x", "b": "y"' (normalised first if asked;
    normalise() works member by member, so normalising a fragment equals normalising it inside a document)."""
    if normalised:
        obj = normalise(obj)
    return json.dumps(obj, ensure_ascii=False)[1:-1].encode()


def _q(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=False).encode()


@dataclass
class _Pools:
    """Item templates serialised once per run (raw or normalised): per document the generator only picks
    byte fragments and joins them (building dicts and json.dumps per document is several times slower)."""

    items: dict[str, list[tuple[bytes, int]]]  # section -> [(members JSON, raw bytes incl. per-item fields)]
    sections: list[str]                        # fill-up sections (SECTION_WEIGHTS > 0)
    declarants: list[bytes]
    family: list[bytes]


# Per item, besides the template: `"<13-digit id>": {"iteration": "<id>", "person": "<id>", }` and ", ".
_ITEM_OVERHEAD = 60


def _pools(rng: random.Random, normalised: bool) -> _Pools:
    # The rng draws are the same either way, so raw and normalised runs of a seed hold the same documents;
    # sizes are always the raw ones, which is what the size distribution is about.
    items = {}
    for name, build in BUILDERS.items():
        pool = []
        for _ in range(POOL_SIZE):
            t = build(rng)
            if name == "step_11":
                t.pop("sizeIncome")  # drawn per item
            size = len(_frag(t)) + _ITEM_OVERHEAD + (30 if name == "step_11" else 0)
            pool.append((_frag(t, normalised), size))
        items[name] = pool
    sections = [s for s, w in SECTION_WEIGHTS.items() if w and s in BUILDERS]
    declarants = []
    for _ in range(POOL_SIZE):
        d = _declarant(rng)
        del d["lastname"], d["firstname"]
        declarants.append(_frag(d, normalised))
    return _Pools(items, sections, declarants, [_frag(_family(rng), normalised) for _ in range(POOL_SIZE)])


def _target_size(rng: random.Random) -> int:
    """A document size drawn to match the recorded study: log-normal body plus a long tail."""
    r = rng.random()
    if r < 0.0012:  # the cluster of huge declarations (the recorded p99.9 … max)
        return rng.randint(255000, 282000)
    if r < 0.018:  # large declarations: log-uniform 25 KB … 160 KB (1 % of all end above 48 KB)
        return int(25000 * (160 / 25) ** rng.random())
    return max(5200, int(rng.lognormvariate(9.637, 0.19)))  # median ≈ 15.3 KB, p90 ≈ 19.6 KB


def _declarant(rng: random.Random) -> dict:
    return {"lastname": rng.choice(LASTNAMES), "firstname": rng.choice(FIRSTNAMES),
            "middlename": rng.choice(MIDDLENAMES), "workPost": rng.choice(POSTS), "workPlace": rng.choice(PLACES),
            "postCategory": rng.choice(["А", "Б", "В", ""]), "postType": "Посада державної служби",
            "responsiblePosition": rng.choice(["", "Керівні посади"]), "corruptionAffected": "",
            "birthday": CONFIDENTIAL, "unzr": CONFIDENTIAL, "passport": CONFIDENTIAL, "taxNumber": CONFIDENTIAL,
            "country": "1", "cityType": rng.choice(CITIES), "actual_country": "1",
            "actual_cityPath": rng.choice(CITIES), "streetType": "вулиця", "street": CONFIDENTIAL,
            "houseNum": CONFIDENTIAL, "apartmentsNum": CONFIDENTIAL, "postCode": CONFIDENTIAL,
            "changedName": "", "previous_lastname": "", "previous_firstname": "", "previous_middlename": "",
            "eng_lastname": "", "eng_firstname": "", "eng_middlename": "", "eng_identic": "",
            "ua_postCode": CONFIDENTIAL}


def _family(rng: random.Random) -> dict:
    return {"subjectRelation": rng.choice(RELATIONS), "lastname": rng.choice(LASTNAMES),
            "firstname": rng.choice(FIRSTNAMES), "middlename": rng.choice(MIDDLENAMES), "citizenship": "1",
            "birthday": CONFIDENTIAL, "unzr": CONFIDENTIAL, "taxNumber": CONFIDENTIAL, "passport": CONFIDENTIAL,
            "no_taxNumber": "", "previous_lastname": "", "eng_lastname": "", "ua_sameRegLivingWithDeclarant": "1",
            "country": "1", "cityType": rng.choice(CITIES), "ua_postCode": CONFIDENTIAL}


_FAMILY_COUNTS = [0, 1, 2, 3, 4]
_FAMILY_CUM = [0.15, 0.45, 0.75, 0.93, 1.0]
_DECL_TYPES = ["1", "2", "3", "4"]
_DECL_TYPE_CUM = [TARGET["type1_share"], 0.91, 0.97, 1.0]
_ODD_INCOMES = [CONFIDENTIAL, UNKNOWN, "", "-"]
# uuid.UUID(int=n, version=4) without the object: clear, then set, the version and variant bits.
_UUID_CLEAR = ~((0xc000 << 48) | (0xf000 << 64))
_UUID_SET = (0x8000 << 48) | (4 << 76)


@dataclass(frozen=True)
class Record:
    line: str        # one declaration as JSON (no newline)
    dtype: str       # step_0.declarationType
    items: int       # item objects in step_2 … step_17


def _documents(count: int, seed: int, normalised: bool = False,
               compact_id: bool = False) -> Iterator[tuple[bytes, str, int]]:
    """The fast path: (UTF-8 JSON, step_0.declarationType, item count) per declaration.

    Raw and normalised runs draw the same random numbers, so the normalised text of a seed is exactly
    json.dumps(normalise(raw document), ensure_ascii=False) — built from pre-normalised fragments instead.
    """
    rng = random.Random(seed)
    pools = _pools(rng, normalised)
    rand, getrandbits = rng.random, rng.getrandbits

    def choice(seq):  # rng.choice costs ~10x more; this is still deterministic per seed
        return seq[int(rand() * len(seq))]
    body_sections = ITEM_SECTIONS[1:]                        # step_3 … step_17, one entry list each
    slot = {s: i for i, s in enumerate(body_sections)}
    income_slot = slot["step_11"]
    # One flat list of (slot, ', <members>}', size), each section's templates repeated by its weight;
    # incomes lack the closing brace: their sizeIncome is drawn per item.
    flat = [(slot[s], b", " + frag + (b"" if s == "step_11" else b"}"), size) for s in pools.sections
            for _ in range(SECTION_WEIGHTS[s]) for frag, size in pools.items[s]]
    n_flat = len(flat)
    incomes = [(income_slot, b", " + frag, size) for frag, size in pools.items["step_11"]]
    n_income_templates = len(incomes)
    # Section openers, and what an empty section / an odd income becomes (raw or normalised).
    heads = [f'"{s}": {{'.encode() for s in body_sections]
    list_heads = [f'"{s}": ['.encode() if s in LIST_SECTIONS else None for s in body_sections]
    empty = b"{}" if normalised else b"{" + _frag(EMPTY_SECTION) + b"}"
    empties = [f'"{s}": '.encode() + empty for s in body_sections]
    odd_incomes = [b", " + _frag({"sizeIncome": v}, normalised) + b"}" for v in _ODD_INCOMES]
    list_shapes = not normalised  # normalise() turns list sections into objects keyed by `iteration`
    lastnames = [_q(x) for x in LASTNAMES]
    firstnames = [_q(x) for x in FIRSTNAMES]
    declarants, family_pool = pools.declarants, pools.family
    changes_share = TARGET["changes_share_of_type1"]
    for _ in range(count):
        n = getrandbits(128) & _UUID_CLEAR | _UUID_SET
        h = f"{n:032x}"
        doc_id = f"nacp_{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        if compact_id:
            doc_id = short_id(doc_id)
        dtype = _DECL_TYPES[bisect_right(_DECL_TYPE_CUM, rand())]
        year = "2015" if rand() < 0.35 else "2016"
        step_0 = f'{{"declarationType": "{dtype}", "declarationYear1": "{year}"'
        if dtype == "1":
            if rand() < changes_share:
                step_0 += f', "changesYear": "{year}"'
        else:
            step_0 += f', "declarationYearTo": "{_date(rng, 2016, 2017)}"'
        parts = [f'{{"_id": "{doc_id}", "step_0": {step_0}}}, "step_1": {{"lastname": '.encode()
                 + choice(lastnames) + b', "firstname": ' + choice(firstnames) + b", " + choice(declarants) + b"}"]
        target = _target_size(rng) - 2750  # step_0, step_1, empty markers, _id

        next_id = 1_450_000_000_000 + getrandbits(35)
        persons = ["1", "1"]
        family = []
        for _ in range(_FAMILY_COUNTS[bisect_right(_FAMILY_CUM, rand())]):
            next_id += 1 + int(rand() * 5000)
            fid = str(next_id)
            persons.append(fid)
            family.append(f'"{fid}": {{"iteration": "{fid}", '.encode() + choice(family_pool) + b"}")
            target -= 740
        n_persons = len(persons)

        # Incomes first: several items with mixed persons, so an income view has real work.
        # Item ids have 13 digits, so every entry starts with a 17-byte '"<id>": ' key.
        body: list[list[bytes]] = [[] for _ in body_sections]
        n_incomes = 2 + int(rand() * 5)
        k = 0
        while k < n_incomes or target > 0:
            s, frag, size = incomes[int(rand() * n_income_templates)] if k < n_incomes else flat[int(rand() * n_flat)]
            next_id += 1 + int(rand() * 5000)
            if s == income_slot:
                r = rand()
                if r < 0.03:
                    frag += odd_incomes[int(rand() * 4)]
                else:
                    amount = 500 + rand() * 59500 if r < 0.5 else 20000 + rand() * 880000
                    if normalised:  # what parse_number makes of _money(amount)
                        frag += f', "sizeIncome": {float(f"{amount:.2f}")!r}}}'.encode()
                    else:
                        frag += f', "sizeIncome": "{_money(amount)}"}}'.encode()
            i = str(next_id)
            body[s].append(f'"{i}": {{"iteration": "{i}", "person": "{persons[int(rand() * n_persons)]}"'.encode()
                           + frag)
            k += 1
            target -= size

        if not family:
            parts.append(b'"step_2": ' + empty)
        elif rand() < 0.15 and list_shapes:
            parts.append(b'"step_2": [' + b", ".join([m[17:] for m in family]) + b"]")
        else:
            parts.append(b'"step_2": {' + b", ".join(family) + b"}")
        for j, entries in enumerate(body):
            if not entries:
                parts.append(empties[j])
            elif list_heads[j] is not None and rand() < 0.15 and list_shapes:
                parts.append(list_heads[j] + b", ".join([t[17:] for t in entries]) + b"]")
            else:
                parts.append(heads[j] + b", ".join(entries) + b"}")
        parts[-1] += b"}"
        yield b", ".join(parts), dtype, len(family) + k


def records(count: int, seed: int) -> Iterator[Record]:
    """Raw declarations as JSON text with their type and item count, deterministically from seed."""
    for data, dtype, items in _documents(count, seed):
        yield Record(data.decode(), dtype, items)


def declaration_lines(count: int, seed: int) -> Iterator[str]:
    """Raw declarations as JSON lines (without newline)."""
    for data, _, _ in _documents(count, seed):
        yield data.decode()


def declarations(count: int, seed: int) -> Iterator[dict]:
    """Raw synthetic declarations as dicts (the same documents `dragnet generate` writes)."""
    loads = json.loads
    for data, _, _ in _documents(count, seed):
        yield loads(data)


def count_items(doc: dict) -> int:
    """Item objects in step_2 … step_17 (lists or objects keyed by id; `empty` markers count 0)."""
    n = 0
    for s in ITEM_SECTIONS:
        v = doc.get(s)
        if isinstance(v, list):
            n += len(v)
        elif isinstance(v, dict) and "empty" not in v:
            n += len(v)
    return n


@dataclass
class WriteResult:
    count: int
    bytes: int                # bytes of JSON written, without newlines and before compression
    sizes: list[int]          # serialised size of every document (bytes)
    type1: int                # documents with step_0.declarationType == "1"
    items: int                # item objects in step_2 … step_17


def open_output(path: str) -> IO[bytes]:
    """A binary file; `.gz` paths are gzip-compressed with mtime 0 and no name, so output is reproducible.

    Compression is ISA-L's deflate (python-isal), level 1: about 4x faster than zlib level 1 and a little
    smaller, so compressing costs ~20 µs per declaration instead of ~90. The bytes depend on the isal
    version (as zlib's would on zlib's); any gzip reader reads them.
    """
    raw = open(path, "wb")
    if path.endswith(".gz"):
        from isal import igzip

        return igzip.IGzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0)
    return raw


class _Writer:
    """Writes in a background thread: compression and file writes release the GIL, so on a second core
    they overlap with generating the next documents (on one core this costs next to nothing)."""

    def __init__(self, path: str):
        self._fh = open_output(path)
        self._queue: queue.Queue = queue.Queue(maxsize=4)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="dragnet-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (chunk := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._fh.write(chunk)
                except BaseException as exc:  # reported by close()
                    self._error = exc

    def write(self, chunk: bytes) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(chunk)

    def __enter__(self) -> "_Writer":
        return self

    def __exit__(self, *exc) -> None:
        self._queue.put(None)
        self._thread.join()
        self._fh.close()
        if self._error is not None and exc[0] is None:
            raise self._error


def generate_file(path: str, count: int, seed: int, *, normalise: bool = False, compact_id: bool = False,
                  progress: Callable[[int], None] | None = None) -> WriteResult:
    """Write `count` declarations as JSON lines to path (`.gz` compresses); raw unless normalise.

    Normalised output is json.dumps(normalise(doc), ensure_ascii=False) of the raw documents of the same
    seed, assembled from pre-normalised fragments rather than by parsing and re-serialising each one.
    """
    sizes: list[int] = []
    add_size = sizes.append
    n = type1 = items = 0
    pending: list[bytes] = []
    pending_bytes = 0
    with _Writer(path) as fh:
        for data, dtype, n_items in _documents(count, seed, normalise, compact_id):
            pending.append(data)
            size = len(data)
            add_size(size)
            pending_bytes += size
            if dtype == "1":
                type1 += 1
            items += n_items
            if pending_bytes > 1 << 21:
                pending.append(b"")
                fh.write(b"\n".join(pending))
                n += len(pending) - 1
                pending, pending_bytes = [], 0
                if progress is not None:
                    progress(n)
        if pending:
            n += len(pending)
            pending.append(b"")
            fh.write(b"\n".join(pending))
    total = sum(sizes)
    if progress is not None:
        progress(n)
    return WriteResult(n, total, sizes, type1, items)
