// The `m.login.password` stage of user-interactive auth: the session's own user, with that user's
// current password. A wrong password (or an unknown user) is a failed attempt the client may
// retry (401); another user's right password is 403 M_FORBIDDEN outright, as Synapse answers:
// the credentials are valid, but not for this account.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import type { Schema } from '../storage/schema.js';
import { findLocalUser, identifiedUser } from './identifiers.js';
import { verifyPassword } from './passwords.js';
import { StageFailure, type StageChecker } from './uia.js';

export function passwordStage(db: Kysely<Schema>, serverName: string): StageChecker {
  return async (auth, ctx) => {
    let user: string;
    try {
      user = identifiedUser(auth);
    } catch (err) {
      // A client that names nobody means the user it is authenticated as.
      if (!(err instanceof HearthError)) throw err;
      if (err.errcode !== 'M_MISSING_PARAM' || ctx.userId === null) throw new StageFailure(err.errcode, err.message);
      user = ctx.userId;
    }
    const password = auth['password'];
    if (typeof password !== 'string') throw new StageFailure('M_MISSING_PARAM', 'Missing password');
    const row = await findLocalUser(db, serverName, user);
    if (!row) throw new StageFailure('M_FORBIDDEN', 'Invalid username or password');
    if (!(await verifyPassword(password, row.password_hash))) throw new StageFailure('M_FORBIDDEN', 'Invalid username or password');
    // Thrown as a plain error, so the stage is not completed and no challenge is offered again.
    if (row.user_id !== ctx.userId) throw HearthError.forbidden('Invalid auth: the password is not the requesting user\'s');
  };
}
