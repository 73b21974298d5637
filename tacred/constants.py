"""Fixed symbols and label sets of TACRED (Zhang et al., 2017).

Label ids are fixed in the order of the official release so that predictions of different runs and
tools line up; ``NO_RELATION`` is always id 0.
"""

PAD = "<PAD>"
UNK = "<UNK>"
PAD_ID = 0
UNK_ID = 1

NO_RELATION = "no_relation"

SUBJECT_TYPES = ("ORGANIZATION", "PERSON")
OBJECT_TYPES = (
    "PERSON", "ORGANIZATION", "DATE", "NUMBER", "TITLE", "COUNTRY", "LOCATION", "CITY", "MISC",
    "STATE_OR_PROVINCE", "DURATION", "NATIONALITY", "CAUSE_OF_DEATH", "CRIMINAL_CHARGE", "RELIGION",
    "URL", "IDEOLOGY",
)

# Stanford CoreNLP NER tags as they appear in TACRED's ``stanford_ner`` field.
NER_TAGS = (
    "O", "PERSON", "ORGANIZATION", "LOCATION", "DATE", "NUMBER", "MISC", "DURATION", "MONEY",
    "PERCENT", "ORDINAL", "TIME", "SET", "TITLE", "COUNTRY", "CITY", "STATE_OR_PROVINCE",
    "NATIONALITY", "CAUSE_OF_DEATH", "CRIMINAL_CHARGE", "RELIGION", "URL", "IDEOLOGY", "EMAIL",
)

# Penn Treebank tags as they appear in TACRED's ``stanford_pos`` field.
POS_TAGS = (
    "NNP", "NN", "IN", "DT", ",", "JJ", "NNS", "VBD", "CD", "CC", ".", "RB", "VBN", "PRP", "TO",
    "VB", "VBG", "VBZ", "PRP$", ":", "POS", "VBP", "-LRB-", "-RRB-", "MD", "NNPS", "WP", "WDT",
    "WRB", "RP", "JJR", "JJS", "$", "FW", "RBR", "SYM", "EX", "RBS", "WP$", "PDT", "LS", "UH", "#",
    "``", "''",
)

TACRED_LABELS = (
    "no_relation", "per:title", "org:top_members/employees", "per:employee_of",
    "org:alternate_names", "org:country_of_headquarters", "per:countries_of_residence",
    "org:city_of_headquarters", "per:cities_of_residence", "per:age",
    "per:stateorprovinces_of_residence", "per:origin", "org:subsidiaries", "org:parents",
    "per:spouse", "org:stateorprovince_of_headquarters", "per:children", "per:other_family",
    "per:alternate_names", "org:members", "per:siblings", "per:schools_attended", "per:parents",
    "per:date_of_death", "org:member_of", "org:founded_by", "org:website", "per:cause_of_death",
    "org:political/religious_affiliation", "org:founded", "per:city_of_death", "org:shareholders",
    "org:number_of_employees/members", "per:date_of_birth", "per:city_of_birth", "per:charges",
    "per:stateorprovince_of_death", "per:religion", "per:stateorprovince_of_birth",
    "per:country_of_birth", "org:dissolved", "per:country_of_death",
)
assert len(TACRED_LABELS) == 42 and TACRED_LABELS[0] == NO_RELATION
