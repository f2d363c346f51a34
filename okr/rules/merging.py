"""The field merge of concurrent edits: three versions of one record's fields (base, as a form showed them when
opened; theirs, as stored now; mine, as submitted) become one, field by field."""


def merge(base, theirs, mine):
    """(merged, clashes): each field only one side changed takes that side's value, one both changed alike takes
    it; clashes names, in mine's order, the fields both changed differently, which keep mine in merged.

    base, theirs and mine map field names to values (a field missing from base or theirs counts as unchanged).
    """
    merged, clashes = {}, []
    for field, value in mine.items():
        was = base.get(field, value)
        now = theirs.get(field, was)
        if value == was:
            merged[field] = now
        else:
            merged[field] = value
            if now != was and now != value:
                clashes.append(field)
    return merged, clashes
