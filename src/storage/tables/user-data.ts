// Per-user data: profiles, account data, filters, receipts, to-device messages, presence
// (migration 004).


export interface UserDataTables {}
