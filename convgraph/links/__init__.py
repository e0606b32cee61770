"""Parent links, the structure every tree is made of: checking them
(`integrity`) and walking them, one chain at a time (`integrity.ParentWalk`)
or every node's at once (`pointer_jumping`). The readers and the model both
stand on these; they import nothing else of convgraph's but the contract.
"""
