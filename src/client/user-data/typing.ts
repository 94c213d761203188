// PUT /rooms/{roomId}/typing/{userId}.

import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { TypingService } from '../../users/typing.js';
import { body, param, requesterOf, required, VERSIONS } from './fields.js';

export function typingRoutes(deps: { typing: TypingService }): RouteDef[] {
  const { typing } = deps;
  return [
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/rooms/:roomId/typing/:userId',
      handler: async (req) => {
        const b = body(req);
        const isTyping = required(b, 'typing');
        if (typeof isTyping !== 'boolean') throw HearthError.badJson("'typing' must be a boolean");
        const timeout = b['timeout'];
        if (timeout !== undefined && typeof timeout !== 'number') throw HearthError.badJson("'timeout' must be an integer");
        await typing.setTyping(requesterOf(req).userId, param(req, 'userId'), param(req, 'roomId'), isTyping, timeout);
        return { body: {} };
      },
    },
  ];
}
