"""Coding agents' sessions: Claude Code, Codex CLI and Gemini CLI.

`sessions.AgentSessions` reads a session file, a project folder or an
agent's whole store; `files` holds what the readers share (session groups,
bounded JSON lines); one module per agent turns its records into the chat
exports' messages (`claude_code`, `codex`, `gemini_cli`), and `join` hangs
resumed sessions and subagents where they continue.
"""
