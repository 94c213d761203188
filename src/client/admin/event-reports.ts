// Reporting events: the client API's POST /rooms/{roomId}/report/{eventId}, and the admin API's
// /v1/event_reports to list, read and delete the reports.

import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { EventReports } from '../../rooms/admin/event-reports.js';
import { body, optionalString, param, query, queryInt, requester } from '../rooms/fields.js';
import { queryDir } from './rooms.js';

function reportId(raw: string): number {
  if (!/^\d{1,15}$/.test(raw)) throw HearthError.invalidParam('The report_id parameter must be a string representing a positive integer.');
  return Number(raw);
}

export function eventReportRoutes(deps: { reports: EventReports }): RouteDef[] {
  const { reports } = deps;
  return [
    {
      method: 'POST',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/rooms/:roomId/report/:eventId',
      handler: async (req) => {
        const b = body(req);
        const reason = optionalString(b, 'reason');
        const score = b.score;
        if (score !== undefined && score !== null && !Number.isInteger(score)) throw HearthError.badJson("Param 'score' must be an integer");
        await reports.report(requester(req), param(req, 'roomId'), param(req, 'eventId'), {
          ...(reason !== undefined ? { reason } : {}),
          ...(typeof score === 'number' ? { score } : {}),
        });
        return { body: {} };
      },
    },
    {
      method: 'GET',
      api: 'admin',
      versions: ['v1'],
      path: '/event_reports',
      handler: async (req) => {
        const userId = query(req, 'user_id');
        const roomId = query(req, 'room_id');
        return {
          body: await reports.list({
            from: queryInt(req, 'from', 0, 0, Number.MAX_SAFE_INTEGER),
            limit: queryInt(req, 'limit', 100, 0, 1_000_000),
            dir: queryDir(req, 'b'),
            ...(userId !== undefined ? { userId } : {}),
            ...(roomId !== undefined ? { roomId } : {}),
          }),
        };
      },
    },
    { method: 'GET', api: 'admin', versions: ['v1'], path: '/event_reports/:reportId', handler: async (req) => ({ body: await reports.get(reportId(param(req, 'reportId'))) }) },
    {
      method: 'DELETE',
      api: 'admin',
      versions: ['v1'],
      path: '/event_reports/:reportId',
      handler: async (req) => {
        await reports.delete(reportId(param(req, 'reportId')));
        return { body: {} };
      },
    },
  ];
}
