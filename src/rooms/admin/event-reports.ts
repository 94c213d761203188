// Reported events: users report events they can see (POST /rooms/{roomId}/report/{eventId}); the
// admin API lists, reads and deletes the reports, with the room's name and the event's sender.

import { HearthError } from '../../protocol/errors.js';
import { deleteEventReport, eventReport, eventReports, insertEventReport, type EventReportRow, type EventReportsQuery } from '../../storage/admin/rooms.js';
import type { Actor } from '../actor.js';
import type { ClientEvent } from '../client-event.js';
import type { RoomService } from '../service.js';

export interface EventReport {
  id: number;
  received_ts: number;
  room_id: string;
  name: string | null;
  event_id: string;
  user_id: string;
  reason: string | null;
  score: number | null;
  sender: string | null;
  canonical_alias: string | null;
}

export class EventReports {
  constructor(private readonly deps: { readonly rooms: RoomService; readonly now?: () => number }) {}

  private get db() {
    return this.deps.rooms.reader.db;
  }

  /** Stores a report; 404 for an event the user cannot see. */
  async report(actor: Actor, roomId: string, eventId: string, report: { reason?: string; score?: number }): Promise<void> {
    try {
      await this.deps.rooms.getEvent(actor, roomId, eventId);
    } catch (err) {
      if (err instanceof HearthError && (err.status === 403 || err.status === 404 || err.status === 400)) throw HearthError.notFound('Unable to find event');
      throw err;
    }
    await insertEventReport(this.db, {
      received_ts: (this.deps.now ?? Date.now)(),
      room_id: roomId,
      event_id: eventId,
      user_id: actor.userId,
      reason: report.reason ?? null,
      score: report.score ?? null,
    });
  }

  async list(query: EventReportsQuery): Promise<{ event_reports: EventReport[]; total: number; next_token?: number }> {
    const { rows, total } = await eventReports(this.db, query);
    const reports: EventReport[] = [];
    for (const row of rows) reports.push(await this.describe(row));
    return { event_reports: reports, total, ...(query.from + rows.length < total ? { next_token: query.from + rows.length } : {}) };
  }

  async get(id: number): Promise<EventReport & { event_json: ClientEvent | null }> {
    const row = await eventReport(this.db, id);
    if (row === undefined) throw HearthError.notFound('Event report not found');
    const event = await this.deps.rooms.reader.event(row.event_id);
    const eventJson = event === undefined ? null : ((await this.deps.rooms.reader.clientEvents([event], { now: Date.now(), format: 'federation' }))[0] ?? null);
    return { ...(await this.describe(row)), event_json: eventJson };
  }

  async delete(id: number): Promise<void> {
    if (!(await deleteEventReport(this.db, id))) throw HearthError.notFound('Event report not found');
  }

  private async describe(row: EventReportRow): Promise<EventReport> {
    const room = await this.deps.rooms.reader.roomRow(row.room_id);
    const event = await this.deps.rooms.reader.event(row.event_id);
    return {
      id: Number(row.id),
      received_ts: Number(row.received_ts),
      room_id: row.room_id,
      name: room?.name ?? null,
      event_id: row.event_id,
      user_id: row.user_id,
      reason: row.reason,
      score: row.score === null ? null : Number(row.score),
      sender: event?.sender ?? null,
      canonical_alias: room?.canonical_alias ?? null,
    };
  }
}
