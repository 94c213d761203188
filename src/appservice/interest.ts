// Which events an application service is sent (application service API, "Pushing events"): those
// of rooms in its room namespaces; those whose sender, or whose state key (a member event's user),
// is the service's user or in its user namespaces; those of rooms where one of its users is joined;
// and those of rooms with an alias in its alias namespaces.
//
// One per service, as each service's queue reads the stream at its own pace. What rooms hold is
// cached per room: the service's users joined to it, kept current by the member events the queue
// passes in order (`observe`), and the room's aliases, read again after a while (a local alias is
// set without an event).

import type { Kysely } from 'kysely';
import type { RoomReader } from '../rooms/reader.js';
import { aliasesOfRoom } from '../storage/rooms/aliases.js';
import { roomById } from '../storage/rooms/rooms.js';
import type { Schema } from '../storage/schema.js';
import type { AppServices } from './namespaces.js';
import type { AppServiceRegistration } from './registration.js';

/** What interest reads of an event. */
export interface InterestEvent {
  readonly roomId: string;
  readonly type: string;
  readonly sender: string;
  readonly stateKey?: string | undefined;
  readonly content: Readonly<Record<string, unknown>>;
}

export interface InterestDeps {
  /** The room's joined members now. */
  joinedMembers(roomId: string): Promise<readonly string[]>;
  /** The room's aliases: local ones and those of its canonical alias event. */
  aliases(roomId: string): Promise<readonly string[]>;
  readonly now?: () => number;
}

/** How long a room's aliases are trusted before they are read again. */
const ALIASES_TTL_MS = 60_000;
/** Rooms whose facts are kept; the least recently used go first. */
const MAX_ROOMS = 10_000;

interface RoomFacts {
  /** The service's users joined to the room. */
  readonly members: Set<string>;
  aliases: readonly string[];
  aliasesAt: number;
}

export class ServiceInterest {
  private readonly rooms = new Map<string, RoomFacts>();
  private readonly now: () => number;

  constructor(
    private readonly services: AppServices,
    private readonly service: AppServiceRegistration,
    private readonly deps: InterestDeps,
  ) {
    this.now = deps.now ?? Date.now;
  }

  /** Whether the service is sent `event`. */
  async interested(event: InterestEvent): Promise<boolean> {
    const { services, service } = this;
    if (services.isInterestedInRoom(service, event.roomId)) return true;
    if (services.isSenderOrInUserNamespace(service, event.sender)) return true;
    if (event.type === 'm.room.member' && event.stateKey !== undefined && services.isSenderOrInUserNamespace(service, event.stateKey)) return true;
    return this.interestedInRoom(event.roomId);
  }

  /**
   * Whether the room is the service's: in its room namespaces, one of its users joined (as the
   * events read so far say), or an alias in its namespaces.
   */
  async interestedInRoom(roomId: string): Promise<boolean> {
    if (this.services.isInterestedInRoom(this.service, roomId)) return true;
    const facts = await this.facts(roomId);
    return facts.members.size > 0 || this.aliasesMatch(roomId, facts);
  }

  /**
   * The same, with the room's members as they are now: for ephemeral data, which is not ordered
   * with the events (a typing notice right after a join must not wait for the join to be read).
   */
  async interestedInRoomNow(roomId: string): Promise<boolean> {
    if (this.services.isInterestedInRoom(this.service, roomId)) return true;
    if (await this.hasUsersInNow(roomId)) return true;
    return this.aliasesMatch(roomId, await this.facts(roomId));
  }

  /** Whether one of the service's users is joined to the room now. */
  async hasUsersInNow(roomId: string): Promise<boolean> {
    return (await this.deps.joinedMembers(roomId)).some((userId) => this.services.isSenderOrInUserNamespace(this.service, userId));
  }

  private async aliasesMatch(roomId: string, facts: RoomFacts): Promise<boolean> {
    const { services, service } = this;
    if (service.namespaces.aliases.length === 0) return false;
    if (this.now() - facts.aliasesAt > ALIASES_TTL_MS) {
      facts.aliases = await this.deps.aliases(roomId);
      facts.aliasesAt = this.now();
    }
    return facts.aliases.some((alias) => services.isInterestedInAlias(service, alias));
  }

  /**
   * An event of the timeline, in stream order, after `interested` was asked of it: member events
   * move the services' users in or out, canonical alias events change the aliases.
   */
  observe(event: InterestEvent): void {
    const facts = this.rooms.get(event.roomId);
    if (facts === undefined) return;
    if (event.type === 'm.room.member' && event.stateKey !== undefined) {
      if (!this.services.isSenderOrInUserNamespace(this.service, event.stateKey)) return;
      if (event.content['membership'] === 'join') facts.members.add(event.stateKey);
      else facts.members.delete(event.stateKey);
    } else if (event.type === 'm.room.canonical_alias' && event.stateKey === '') {
      facts.aliasesAt = 0;
    }
  }

  private async facts(roomId: string): Promise<RoomFacts> {
    const known = this.rooms.get(roomId);
    if (known !== undefined) {
      this.rooms.delete(roomId);
      this.rooms.set(roomId, known);
      return known;
    }
    const joined = await this.deps.joinedMembers(roomId);
    const members = new Set(joined.filter((userId) => this.services.isSenderOrInUserNamespace(this.service, userId)));
    const facts: RoomFacts = { members, aliases: [], aliasesAt: 0 };
    this.rooms.set(roomId, facts);
    if (this.rooms.size > MAX_ROOMS) this.rooms.delete(this.rooms.keys().next().value!);
    return facts;
  }
}

/** The room's aliases: its local ones and those its canonical alias event names. */
export async function roomAliasesFor(db: Kysely<Schema>, reader: Pick<RoomReader, 'stateSubsetOfSnapshot'>, roomId: string): Promise<string[]> {
  const out = new Set(await aliasesOfRoom(db, roomId));
  const room = await roomById(db, roomId);
  if (room?.state_snapshot_nid != null) {
    const state = await reader.stateSubsetOfSnapshot(Number(room.state_snapshot_nid), 'm.room.canonical_alias', ['']);
    for (const e of state.values()) {
      const { alias, alt_aliases: alt } = e.pdu.content as { alias?: unknown; alt_aliases?: unknown };
      if (typeof alias === 'string') out.add(alias);
      if (Array.isArray(alt)) for (const a of alt) if (typeof a === 'string') out.add(a);
    }
  }
  return [...out];
}
