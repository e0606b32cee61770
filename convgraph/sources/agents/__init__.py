"""Coding agents' sessions: Claude Code, Codex CLI and Gemini CLI.

`sessions.detect` says whether a path holds agents' sessions (a session
file, a project folder, an agent's store, or a home folder holding all
three) and opens it as `sessions.AgentSessions`; `files` holds what the
readers share (session groups, bounded JSON lines, the problems a read
reports); one module per agent turns its records into the chat exports'
messages (`claude_code`, `codex`, `gemini_cli`), and `join` hangs resumed
sessions and subagents where they continue.
"""
