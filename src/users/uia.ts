// User-interactive authentication (client-server API, "User-Interactive Authentication API").
// An endpoint offers flows (lists of stage types); the client completes the stages of one flow
// across several requests tied together by a session; each stage is checked by a StageChecker.
// Sessions live in the database and are bound to one operation and one user.

import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject } from '../protocol/json.js';
import type { Schema } from '../storage/schema.js';
import {
  deleteUiaSession,
  deleteUiaSessionsCreatedBefore,
  findUiaSession,
  insertUiaSession,
  updateUiaSession,
} from '../storage/accounts/uia-sessions.js';

export const STAGE_DUMMY = 'm.login.dummy';
export const STAGE_PASSWORD = 'm.login.password';
export const STAGE_REGISTRATION_TOKEN = 'm.login.registration_token';

export interface UiaSession {
  readonly id: string;
  readonly completed: readonly string[];
  /** Stage results and kept request parameters (under `request`). */
  readonly params: JsonObject;
}

/** A stage attempt that failed; the client may try again in the same session. */
export class StageFailure extends Error {
  constructor(
    readonly errcode: string,
    message: string,
  ) {
    super(message);
    this.name = 'StageFailure';
  }
}

export interface StageContext {
  /** The authenticated user the session belongs to; null for registration. */
  readonly userId: string | null;
  readonly session: UiaSession;
}

/** Checks one stage's auth dict; throws StageFailure; may return values to keep in the session. */
export type StageChecker = (auth: JsonObject, ctx: StageContext) => Promise<JsonObject | void>;

/**
 * The 401 reply that asks for (more) authentication. `failed` says whether a stage attempt just
 * failed: only then does the reply carry `errcode` and `error`.
 */
export class UiaChallenge extends HearthError {
  constructor(
    readonly challenge: JsonObject,
    readonly failed: boolean,
    errcode = 'M_UNAUTHORIZED',
    message = 'Additional authentication required',
  ) {
    super(401, errcode, message, challenge);
    this.name = 'UiaChallenge';
  }

  /** The session the client is to continue. */
  get sessionId(): string {
    return this.challenge['session'] as string;
  }

  /** The response body as the spec shows it. */
  replyBody(): JsonObject {
    return this.failed ? { errcode: this.errcode, error: this.message, ...this.challenge } : { ...this.challenge };
  }
}

export interface UiaRequest {
  /** What is being authorized, e.g. `POST /account/password`; a session serves only this. */
  readonly operation: string;
  readonly userId: string | null;
  readonly flows: readonly (readonly string[])[];
  /** Per-stage information for the client (`params` of the 401 reply). */
  readonly params?: JsonObject;
  /** The request body's `auth`. */
  readonly auth: unknown;
  /** Request parameters to keep for later requests of the session; ignored when empty. */
  readonly request?: JsonObject;
}

export interface UserInteractiveAuthDeps {
  readonly db: Kysely<Schema>;
  readonly now: () => number;
  readonly stages: Readonly<Record<string, StageChecker>>;
  /** How long a session may be continued. Default one day. */
  readonly sessionLifetimeMs?: number;
}

const CLEANUP_INTERVAL_MS = 10 * 60_000;

export class UserInteractiveAuth {
  private readonly lifetimeMs: number;
  private lastCleanup = 0;

  constructor(private readonly deps: UserInteractiveAuthDeps) {
    this.lifetimeMs = deps.sessionLifetimeMs ?? 24 * 60 * 60_000;
  }

  /**
   * Runs one request through user-interactive auth. Resolves with the session when a flow is
   * complete; otherwise throws UiaChallenge (or a 400/403 HearthError for a bad session).
   */
  async authenticate(req: UiaRequest): Promise<UiaSession> {
    const auth = isJsonObject(req.auth) ? req.auth : undefined;
    if (req.auth !== undefined && req.auth !== null && auth === undefined) throw HearthError.badJson('auth must be an object');
    const sessionId = auth?.['session'];
    if (sessionId !== undefined && typeof sessionId !== 'string') throw HearthError.badJson('auth.session must be a string');

    let session: { id: string; completed: string[]; params: JsonObject };
    if (sessionId === undefined) {
      session = await this.create(req);
    } else {
      const found = await findUiaSession(this.deps.db, sessionId);
      if (!found || this.deps.now() - found.createdTs > this.lifetimeMs) {
        throw new HearthError(400, 'M_UNKNOWN', `Unknown session ID: ${sessionId}`);
      }
      if (found.operation !== req.operation || found.userId !== req.userId) {
        throw HearthError.forbidden('Requested operation has changed during the UI authentication session.');
      }
      session = { id: found.sessionId, completed: [...found.completed], params: { ...found.params } };
      if (req.request && Object.keys(req.request).length > 0) {
        session.params['request'] = req.request;
        await updateUiaSession(this.deps.db, session.id, session.completed, session.params);
      }
    }

    const type = auth?.['type'];
    if (type !== undefined && !session.completed.includes(type as string)) {
      if (typeof type !== 'string') throw this.challenge(req, session, 'M_BAD_JSON', 'auth.type must be a string');
      if (!req.flows.some((f) => f.includes(type))) {
        throw this.challenge(req, session, 'M_UNRECOGNIZED', `Authentication type ${type} is not offered here`);
      }
      const checker = this.deps.stages[type];
      if (!checker) throw this.challenge(req, session, 'M_UNRECOGNIZED', `Unsupported authentication type ${type}`);
      let kept: JsonObject | void;
      try {
        kept = await checker(auth!, { userId: req.userId, session });
      } catch (err) {
        if (err instanceof StageFailure) throw this.challenge(req, session, err.errcode, err.message);
        throw err;
      }
      session.completed.push(type);
      if (kept) Object.assign(session.params, kept);
      await updateUiaSession(this.deps.db, session.id, session.completed, session.params);
    }

    if (req.flows.some((f) => f.every((stage) => session.completed.includes(stage)))) return session;
    throw this.challenge(req, session);
  }

  /**
   * What a live session of this operation and user keeps (stage results, request parameters,
   * values stored with `keep`); undefined for any other session, which `authenticate` refuses.
   */
  async peek(sessionId: string, operation: string, userId: string | null): Promise<JsonObject | undefined> {
    const found = await findUiaSession(this.deps.db, sessionId);
    if (!found || this.deps.now() - found.createdTs > this.lifetimeMs) return undefined;
    if (found.operation !== operation || found.userId !== userId) return undefined;
    return found.params;
  }

  /** Stores values with a session (and drops the named ones), for later requests of it to read. */
  async keep(sessionId: string, values: JsonObject, drop: readonly string[] = []): Promise<void> {
    const found = await findUiaSession(this.deps.db, sessionId);
    if (!found) return;
    const params: JsonObject = { ...found.params, ...values };
    for (const key of drop) delete params[key];
    await updateUiaSession(this.deps.db, sessionId, found.completed, params);
  }

  /** Ends a session whose operation has been carried out. */
  async finish(session: UiaSession): Promise<void> {
    await deleteUiaSession(this.deps.db, session.id);
  }

  /** Takes a stage back (its result turned out unusable) and asks for it again. */
  async retractStage(req: UiaRequest, session: UiaSession, stage: string, errcode: string, message: string): Promise<never> {
    const completed = session.completed.filter((s) => s !== stage);
    await updateUiaSession(this.deps.db, session.id, completed, session.params);
    throw this.challenge(req, { id: session.id, completed }, errcode, message);
  }

  private async create(req: UiaRequest): Promise<{ id: string; completed: string[]; params: JsonObject }> {
    const now = this.deps.now();
    if (now - this.lastCleanup > CLEANUP_INTERVAL_MS) {
      this.lastCleanup = now;
      await deleteUiaSessionsCreatedBefore(this.deps.db, now - this.lifetimeMs);
    }
    const session = {
      id: randomBytes(18).toString('base64url'),
      completed: [] as string[],
      params: req.request && Object.keys(req.request).length > 0 ? { request: req.request } : ({} as JsonObject),
    };
    await insertUiaSession(this.deps.db, {
      sessionId: session.id,
      operation: req.operation,
      userId: req.userId,
      completed: session.completed,
      params: session.params,
      createdTs: now,
    });
    return session;
  }

  private challenge(
    req: UiaRequest,
    session: { id: string; completed: readonly string[] },
    errcode?: string,
    message?: string,
  ): UiaChallenge {
    const body: JsonObject = {
      flows: req.flows.map((stages) => ({ stages: [...stages] })),
      params: req.params ?? {},
      session: session.id,
      completed: [...session.completed],
    };
    return errcode === undefined ? new UiaChallenge(body, false) : new UiaChallenge(body, true, errcode, message);
  }
}
