// Rooms, events and room state (migration 003).


export interface RoomsTables {}
