"""What each relation may relate: the TAC KBP slot schema and the type pairs learned per relation (extraction, vocabularies)."""
