/** The API key port on the table: each request authenticated and counted by one write on its key's item. */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ApiKeyStore, KeyRequest, KeyRequestOutcome } from '../../core/ports';
import { keys } from './keys';
import { markedUpdate, updateIfConditionHolds } from './requests';

/** The key exists, is not revoked and belongs to the service in the path (`:service`). */
const KEY_USABLE = 'attribute_exists(pk) AND attribute_not_exists(revoked_at) AND service_sid = :service';

/**
 * The per-key limit's counts: a map on the key's item, one entry per one-minute window, named by the window's
 * start in epoch minutes.
 */
const RATE_COUNTS = 'rate_counts';
/** Random id of the last request's write (`markedUpdate`). */
const LAST_REQUEST = 'last_request';
const MINUTE_MS = 60_000;
const rateWindowName = (window: number): string => String(Math.floor(window / MINUTE_MS));
/** Entries with a name that is not a window (none are written) are left alone. */
const windowsOf = (image: Record<string, unknown> | undefined): number[] =>
  Object.keys((image?.[RATE_COUNTS] as Record<string, unknown> | undefined) ?? {})
    .filter((name) => /^\d+$/.test(name))
    .map((name) => Number(name) * MINUTE_MS);
/**
 * A window older than the one before `current`: no request counts in it any more. The one before is kept for
 * instances whose clocks are slightly behind at a minute's edge, and later ones for those ahead.
 */
const isStaleWindow = (window: number, current: number): boolean => window < current - MINUTE_MS;
/** Stale windows an item may show before a write removes them at once instead of at the instance's next write. */
const STALE_WINDOWS_BOUND = 8;
/** API keys whose windows one instance remembers. */
const REMEMBERED_KEYS = 10_000;
/** DynamoDB's answer to a SET of a map entry when the map itself is missing. */
const isMissingMap = (error: unknown): boolean =>
  error instanceof Error &&
  error.name === 'ValidationException' &&
  error.message.includes('document path provided in the update expression is invalid');

export class DynamoApiKeyStore implements ApiKeyStore {
  /**
   * Per API key, the windows of the per-key limit its item was last seen to hold (from the images the key's
   * writes return): this instance's next write of the key removes the stale ones, so nothing else is written.
   */
  private readonly keyWindows = new Map<string, number[]>();

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async countKeyRequest(request: KeyRequest): Promise<KeyRequestOutcome> {
    const { keyHash } = request;
    const window = request.windowStart.getTime();
    const stale = (this.keyWindows.get(keyHash) ?? []).filter((seen) => isStaleWindow(seen, window));
    let written = await this.writeKeyRequest(request, window, stale);
    if (written === 'no-counts') {
      // A key issued before the counts map: add it once, then the one write again.
      await this.addRateCounts(keyHash);
      written = await this.writeKeyRequest(request, window, stale);
      if (written === 'no-counts') throw new Error('The API key item still has no rate_counts map');
    }
    const { counted, image } = written;
    if (!counted && (!image || image.revoked_at !== undefined || image.service_sid !== request.serviceSid)) {
      this.keyWindows.delete(keyHash);
      if (!image) return { outcome: 'unknown' };
      return { outcome: image.revoked_at !== undefined ? 'revoked' : 'forbidden' };
    }
    // What the item holds now: its image before the write, less what a successful write removed, plus its window.
    const held = windowsOf(image).filter((seen) => !counted || !stale.includes(seen));
    if (counted && !held.includes(window)) held.push(window);
    const staleNow = held.filter((seen) => isStaleWindow(seen, window));
    if (counted && staleNow.length > STALE_WINDOWS_BOUND) {
      // Instances that each wrote once and were gone before their next write left these: removed now, once,
      // so the item stays small whatever the instances' lives.
      await this.removeRateWindows(keyHash, staleNow);
      this.rememberKeyWindows(
        keyHash,
        held.filter((seen) => !staleNow.includes(seen)),
      );
    } else this.rememberKeyWindows(keyHash, held);
    return { outcome: counted ? 'allowed' : 'limited', window };
  }

  /**
   * The per-key limit's one write: counts in `window`'s entry of `rate_counts` (created at 0 if absent) while
   * the key is usable and the entry is below the limit, removes the `stale` windows in the same write, and
   * keeps `rate_window` (the key's last-used minute). Both outcomes come with the item as it was before.
   * `no-counts`: the item has no `rate_counts` map to count in (DynamoDB refuses a nested SET then).
   */
  private async writeKeyRequest(
    request: KeyRequest,
    window: number,
    stale: number[],
  ): Promise<{ counted: boolean; image?: Record<string, unknown> } | 'no-counts'> {
    const names: Record<string, string> = { '#w': rateWindowName(window) };
    stale.forEach((seen, i) => (names[`#s${i}`] = rateWindowName(seen)));
    const remove = stale.length ? ` REMOVE ${stale.map((_, i) => `${RATE_COUNTS}.#s${i}`).join(', ')}` : '';
    try {
      // Marked: a write the SDK re-sent after a lost answer is neither counted twice nor, refused at the limit,
      // read as a request over it. Both outcomes come with an image (the item before, or as the refusal found it).
      const { applied, item } = await markedUpdate(
        this.client,
        this.tableName,
        {
          Key: keys.apiKey(request.keyHash),
          UpdateExpression: `SET ${RATE_COUNTS}.#w = if_not_exists(${RATE_COUNTS}.#w, :zero) + :one, rate_window = :window${remove}`,
          ConditionExpression: `${KEY_USABLE} AND (attribute_not_exists(${RATE_COUNTS}.#w) OR ${RATE_COUNTS}.#w < :limit)`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: {
            ':service': request.serviceSid,
            ':window': window,
            ':zero': 0,
            ':one': 1,
            ':limit': request.limit,
          },
          // The key's item is small; returned images cost no write units.
          ReturnValues: 'ALL_OLD',
        },
        LAST_REQUEST,
      );
      return { counted: applied, ...(item && { image: item }) };
    } catch (error) {
      if (isMissingMap(error)) return 'no-counts';
      throw error;
    }
  }

  /** Gives a key item written before the counts map one, and drops its old single count (`rate_count`). */
  private async addRateCounts(keyHash: string): Promise<void> {
    await updateIfConditionHolds(this.client, this.tableName, {
      Key: keys.apiKey(keyHash),
      UpdateExpression: `SET ${RATE_COUNTS} = :empty REMOVE rate_count`,
      // Another request may have added it meanwhile (its counts must stay); never creates an item.
      ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(${RATE_COUNTS})`,
      ExpressionAttributeValues: { ':empty': {} },
    });
  }

  private async removeRateWindows(keyHash: string, windows: number[]): Promise<void> {
    await updateIfConditionHolds(this.client, this.tableName, {
      Key: keys.apiKey(keyHash),
      UpdateExpression: `REMOVE ${windows.map((_, i) => `${RATE_COUNTS}.#s${i}`).join(', ')}`,
      ConditionExpression: `attribute_exists(${RATE_COUNTS})`,
      ExpressionAttributeNames: Object.fromEntries(
        windows.map((seen, i) => [`#s${i}`, rateWindowName(seen)]),
      ),
    });
  }

  private rememberKeyWindows(keyHash: string, windows: number[]): void {
    // Bounded memory: a caller cycling keys must not grow it without end.
    if (this.keyWindows.size >= REMEMBERED_KEYS && !this.keyWindows.has(keyHash)) this.keyWindows.clear();
    this.keyWindows.set(keyHash, windows);
  }
}
