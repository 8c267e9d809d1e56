// pglite-socket serialises connections onto the one PGlite session, but its queue only keeps
// a connection exclusive while a transaction is open. The pg client's extended protocol
// (Parse/Bind/Execute … Sync) interleaved between two connections then breaks ("unnamed
// prepared statement does not exist"). This queue keeps the session with one connection from
// its first message until its Sync (or simple Query) completes outside a transaction.
import type { PGlite } from '@electric-sql/pglite';

interface Item {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (n: number) => void;
  reject: (e: unknown) => void;
}

const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const TERMINATE = 0x58; // 'X'
const EXTENDED = new Set([0x50, 0x42, 0x44, 0x45, 0x43, 0x48, 0x46]); // P B D E C H F

export class ProtocolAwareQueue {
  private queue: Item[] = [];
  private processing = false;
  private owner: number | null = null;

  constructor(private readonly db: PGlite) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (d: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ handlerId, message, onData, resolve, reject });
      void this.processQueue();
    });
  }

  getQueueLength() {
    return this.queue.length;
  }

  clearQueueForHandler(handlerId: number) {
    this.queue = this.queue.filter((i) =>
      i.handlerId === handlerId ? (i.reject(new Error('Handler disconnected')), false) : true,
    );
  }

  async clearTransactionIfNeeded(handlerId: number) {
    if (this.owner !== handlerId) return;
    if (this.db.isInTransaction()) await this.db.exec('ROLLBACK').catch(() => {});
    this.owner = null;
    await this.processQueue();
  }

  private async processQueue() {
    if (this.processing) return;
    this.processing = true;
    try {
      while (this.queue.length) {
        const index = this.owner === null ? 0 : this.queue.findIndex((i) => i.handlerId === this.owner);
        if (index === -1) break; // the owner's next message has not arrived yet
        const item = this.queue.splice(index, 1)[0];
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(item.message, {
              onRawData: (d: Uint8Array) => {
                bytes += d.length;
                item.onData(d);
              },
            }),
          );
        } catch (err) {
          item.reject(err);
          continue;
        }
        const type = item.message[0];
        if (type === TERMINATE) {
          // A client that leaves mid-transaction must not hand its open transaction to the next.
          if (this.owner === item.handlerId && this.db.isInTransaction())
            await this.db.exec('ROLLBACK').catch(() => {});
          this.owner = null;
        } else if (type === SYNC || type === QUERY) this.owner = this.db.isInTransaction() ? item.handlerId : null;
        else if (EXTENDED.has(type)) this.owner = item.handlerId;
        item.resolve(bytes);
      }
    } finally {
      this.processing = false;
    }
  }
}
