"""Parent links: checking them (`integrity`) and walking them, one chain
(`integrity.ParentWalk`) or every node's at once (`pointer_jumping`)."""
