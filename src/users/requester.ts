// Who makes an authenticated request, and the access-token check that finds out. The HTTP layer
// attaches a Requester to each authenticated request; services take it as a plain value, so they
// never import the HTTP layer. (The room server's Actor, rooms/actor.ts, is the part of it that
// rooms need.)

/** Who is making an authenticated request. */
export interface Requester {
  readonly userId: string;
  /** Null for tokens without a device (appservice senders). */
  readonly deviceId: string | null;
  readonly isGuest: boolean;
  readonly isAdmin: boolean;
  /** Set when an application service makes the request (its as_token). */
  readonly appserviceId?: string;
  /** The access token's row id, so logout can remove exactly this token. */
  readonly tokenId?: number;
}

/** What the token check reads of the request: where it came from and its user agent. */
export interface RequestOrigin {
  /** The client's address: the peer's, or from X-Forwarded-For when the peer is a trusted proxy. */
  readonly remoteAddress: string;
  /** Absent for callers outside the HTTP layer (the command line, tests). */
  readonly headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** The query parameters (an application service names the user it acts as there). */
  readonly query?: Readonly<Record<string, string | string[] | undefined>>;
}

/** Resolves an access token to its requester; throws 401 M_UNKNOWN_TOKEN for an invalid one. */
export type Authenticator = (accessToken: string, origin: RequestOrigin) => Promise<Requester>;
