// Each room's ordered queue. Everything that decides what a room's next event is and advances its
// head (a local send, a PDU received from another server) runs as a task here, one at a time per
// room, in the order queued. A task may await (reading prev events' states, state resolution), but
// never a network fetch: those happen before a task is queued, so a slow server cannot hold a room.
//
// The common case costs nothing: a task queued on an idle room runs within the very call that
// queued it, so a local send builds its event in the same turn it was asked for.

export class RoomQueue {
  /** Per room with tasks running or waiting: the promise that settles when the last one has. */
  private readonly tails = new Map<string, Promise<unknown>>();
  /** Tasks queued behind an unfinished one, or running asynchronously. */
  private pending = 0;

  /** Runs `task` after every task queued earlier for the room; resolves or rejects as it does. */
  run<T>(roomId: string, task: () => T | Promise<T>): Promise<T> {
    const tail = this.tails.get(roomId);
    let result: Promise<T>;
    if (tail === undefined) {
      let value: T | Promise<T>;
      try {
        value = task();
      } catch (err) {
        return Promise.reject(err);
      }
      // Finished synchronously: the room stays idle.
      if (!(value instanceof Promise)) return Promise.resolve(value);
      result = value;
    } else {
      result = tail.then(task, task);
    }
    this.pending++;
    const done = () => {
      this.pending--;
    };
    const settled = result.then(done, done);
    this.tails.set(roomId, settled);
    void settled.then(() => {
      if (this.tails.get(roomId) === settled) this.tails.delete(roomId);
    });
    return result;
  }

  /** Rooms with tasks running or waiting (for tests and diagnostics). */
  get busyRooms(): number {
    return this.tails.size;
  }

  /** Tasks running or waiting in every room (for metrics). */
  get pendingTasks(): number {
    return this.pending;
  }
}
