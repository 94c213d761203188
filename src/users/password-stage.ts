// The `m.login.password` stage of user-interactive auth: the session's own user, with that user's
// current password.

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
    if (!row || row.user_id !== ctx.userId) throw new StageFailure('M_FORBIDDEN', 'Invalid username or password');
    if (!(await verifyPassword(password, row.password_hash))) throw new StageFailure('M_FORBIDDEN', 'Invalid password');
  };
}
