"""The data exports of chat apps: ChatGPT, Claude.ai and Open WebUI.

`exports.ChatExport` finds an export's JSON (a zip, a file, split files in
a folder: `json_files`) and streams it one conversation at a time; one
module per app turns a conversation into parent-linked messages
(`chatgpt`, `claude`, `openwebui`, in the shape of `messages`), and
`nodes` makes the node contract's nodes of them: one user message and the
run that answers it.
"""
