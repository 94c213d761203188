// Users who asked, on deactivation, for their data to be erased (migration 008): their messages
// are served redacted to anyone who was not in the room when they were sent.

export interface ErasedUsersTable {
  user_id: string;
  erased_ts: number;
}

export interface ErasedUsersTables {
  erased_users: ErasedUsersTable;
}
