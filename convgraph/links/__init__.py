"""Parent links, the structure every tree is made of: checking them, one
tree's records or a whole table (`integrity.check_links`,
`integrity.check_links_table`), and walking them, one chain at a time
(`integrity.ParentWalk`) or every node's at once (`pointer_jumping`, which
also finds each row's parent row from the ids: `parent_rows_of`). The
readers and the model both stand on these; they import nothing else of
convgraph's but the contract and `convgraph.text`.
"""
