"""The tools an agent runs: the toolbox, tool input, file, task and shell tools."""
