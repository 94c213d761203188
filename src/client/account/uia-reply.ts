// User-interactive auth answers 401 with the flows, the session and the completed stages; the
// body carries `errcode` and `error` only after a failed stage attempt, as the spec shows it.

import type { HttpResponse } from '../../http/route.js';
import { UiaChallenge } from '../../users/uia.js';

export async function withUia(run: () => Promise<HttpResponse>): Promise<HttpResponse> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof UiaChallenge) return { status: 401, body: err.replyBody() };
    throw err;
  }
}
