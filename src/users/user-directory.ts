// The user directory: local users whose user ID or display name holds every word of the search
// term (case-insensitive), among those the searcher may see: users sharing a room with them and
// users in public rooms (or everyone, when configured so). The searcher is never among the
// results: Synapse leaves them out when searching everyone, and a client never wants itself offered.

import type { Kysely } from 'kysely';
import { HearthError } from '../protocol/errors.js';
import type { Schema } from '../storage/schema.js';
import { searchProfiles, type ProfileRow } from '../storage/user-data/profiles.js';

export const DEFAULT_SEARCH_LIMIT = 10;
export const MAX_SEARCH_LIMIT = 1000;
const MAX_TERM_LENGTH = 256;
const SCAN_BATCH = 500;

export interface UserDirectoryServiceDeps {
  readonly db: Kysely<Schema>;
  /** Users who share at least one room with the user. */
  readonly usersSharingRooms: (userId: string) => Promise<Iterable<string>>;
  /** Users joined to rooms whose join rule is public or whose history is world-readable. */
  readonly usersInPublicRooms: () => Promise<Iterable<string>>;
  /** Every local user is searchable, whatever rooms they are in. Default false. */
  readonly searchAllUsers?: boolean;
}

export interface DirectoryResult {
  readonly user_id: string;
  readonly display_name?: string;
  readonly avatar_url?: string;
}

export interface DirectorySearch {
  readonly results: DirectoryResult[];
  readonly limited: boolean;
}

/** The term's words, lower-cased and normalized as the stored search keys are. */
export function searchWords(term: string): string[] {
  return term
    .normalize('NFKC')
    .toLowerCase()
    .split(/\s+/u)
    .filter((w) => w !== '');
}

export class UserDirectoryService {
  constructor(private readonly deps: UserDirectoryServiceDeps) {}

  async search(searcherId: string, term: unknown, limit: unknown = DEFAULT_SEARCH_LIMIT): Promise<DirectorySearch> {
    if (typeof term !== 'string') throw HearthError.invalidParam("'search_term' must be a string");
    if (term.length > MAX_TERM_LENGTH) throw HearthError.invalidParam(`'search_term' is too long (max ${MAX_TERM_LENGTH})`);
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 0) {
      throw HearthError.invalidParam("'limit' must be a non-negative integer");
    }
    const wanted = Math.min(limit, MAX_SEARCH_LIMIT);
    const words = searchWords(term);
    if (words.length === 0) return { results: [], limited: false };

    const visible = this.deps.searchAllUsers === true ? undefined : await this.visibleTo(searcherId);
    // Scan matches in user-ID order, keeping the visible ones, up to a few pages' worth to rank.
    const keep = Math.max(4 * wanted, 100) + 1;
    const found: ProfileRow[] = [];
    let after = '';
    for (;;) {
      const batch = await searchProfiles(this.deps.db, words, after, SCAN_BATCH);
      for (const row of batch) {
        if (row.userId !== searcherId && (visible === undefined || visible.has(row.userId))) found.push(row);
        if (found.length >= keep) break;
      }
      if (found.length >= keep || batch.length < SCAN_BATCH) break;
      after = batch[batch.length - 1]!.userId;
    }
    const limited = found.length > wanted;
    found.sort((a, b) => rank(b, words) - rank(a, words) || cmp(a.userId, b.userId));
    const page = found.slice(0, wanted);
    return {
      results: page.map((r) => ({
        user_id: r.userId,
        ...(r.displayname !== null ? { display_name: r.displayname } : {}),
        ...(r.avatarUrl !== null ? { avatar_url: r.avatarUrl } : {}),
      })),
      limited,
    };
  }

  private async visibleTo(searcherId: string): Promise<Set<string>> {
    const [sharing, inPublic] = await Promise.all([this.deps.usersSharingRooms(searcherId), this.deps.usersInPublicRooms()]);
    const visible = new Set(sharing);
    for (const u of inPublic) visible.add(u);
    return visible;
  }
}

/** Higher for better matches: whole words, then prefixes, of the display name or localpart. */
function rank(row: ProfileRow, words: readonly string[]): number {
  const colon = row.userId.indexOf(':');
  const names = [row.userId.slice(1, colon > 0 ? colon : undefined), row.displayname ?? '']
    .flatMap((n) => searchWords(n));
  let score = 0;
  for (const w of words) {
    if (names.includes(w)) score += 2;
    else if (names.some((n) => n.startsWith(w))) score += 1;
  }
  return score + (row.displayname !== null ? 0.5 : 0) + (row.avatarUrl !== null ? 0.25 : 0);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
