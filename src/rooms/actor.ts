// Who asks the room server to act: the authenticated user and device (users/requester.ts's
// Requester has this shape).

export interface Actor {
  readonly userId: string;
  /** Null for tokens without a device. */
  readonly deviceId: string | null;
  readonly isGuest?: boolean;
  readonly isAdmin?: boolean;
}
