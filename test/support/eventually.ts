// Waiting for what no event announces (a log line written as a response finishes, a background
// write, a request reaching the server's notifier): polls until the condition holds, bounded, so
// a slow machine only makes the test wait longer and a broken server fails it instead of hanging.

/** Resolves once `ready()` holds; throws `never: <what>` after `ms` milliseconds. */
export async function eventually(ready: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
