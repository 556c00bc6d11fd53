/**
 * Where a streamed list of JSON string ids may be cut so that what was sent is still valid inside `[…]`: right after
 * the closing quote of an id. The reconciliation answer sends its ids only up to such a place, so a failure later
 * can still close the body as `],"error":…}` (docs/operator-api.md "Reconciliation").
 */

/** The index just after the last complete JSON string in `text`, which starts outside any string; 0 if none ends. */
export function endOfLastWholeString(text: string): number {
  let inString = false;
  let escaped = false;
  let end = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (!inString) {
      if (ch === 0x22) inString = true;
    } else if (escaped) {
      escaped = false;
    } else if (ch === 0x5c) {
      escaped = true;
    } else if (ch === 0x22) {
      inString = false;
      end = i + 1;
    }
  }
  return end;
}
