"""The house's checks of the code and the docs (house.py: includes, READMEs, the harness's
shape; doc_links.py; docs_options.py), run as python3 -m tests.house.NAME."""
