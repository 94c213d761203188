// Errors of the command line: each prints its message alone (no stack); usage errors exit 2.

/** The command was called wrongly: exit 2. */
export class UsageError extends Error {}

/** The operator interrupted a prompt (Ctrl-C): exit 130, as a shell does. */
export class InterruptedError extends Error {}

/** The server could not start for a reason the operator can fix: exit 1. */
export class StartupError extends Error {}
