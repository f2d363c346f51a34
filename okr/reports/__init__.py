"""Reports: what is read back for people, built from the data package's reads with every figure from
okr.progress, one module per job: alignment (a cycle's or an objective's tree, in memory), streaming (the
same, written as it streams, for big ones), spooled and slots (big reports built one slot at a time into a
spool file) and activity (the activity feed as sentences).
"""
