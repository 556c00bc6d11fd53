/**
 * Reads a reconciliation answer `{"users":[...],"timestamp":"...","error":"..."}` as it arrives, chunk by chunk, so
 * the http backend can pass millions of ids on in constant memory and still check the shape. Other keys are
 * skipped whatever they hold. Anything else ends in a thrown Error naming the place.
 */

type Token = { kind: 'punct'; char: string } | { kind: 'string'; value: string } | { kind: 'literal'; raw: string };

/** Splits JSON text into tokens across chunk boundaries (strings keep their escapes until complete). */
class Tokenizer {
  private partial: { kind: 'string' | 'literal'; raw: string; escaped: boolean } | null = null;

  *tokens(chunk: string): Generator<Token> {
    let i = 0;
    while (i < chunk.length) {
      const p = this.partial;
      if (p?.kind === 'string') {
        let j = i;
        for (; j < chunk.length; j++) {
          const ch = chunk[j];
          if (p.escaped) p.escaped = false;
          else if (ch === '\\') p.escaped = true;
          else if (ch === '"') break;
        }
        p.raw += chunk.slice(i, j);
        if (j === chunk.length) return;
        this.partial = null;
        i = j + 1;
        yield { kind: 'string', value: p.raw.includes('\\') ? (JSON.parse(`"${p.raw}"`) as string) : p.raw };
        continue;
      }
      const ch = chunk[i]!;
      if (p?.kind === 'literal') {
        if (/[\w.+-]/.test(ch)) {
          p.raw += ch;
          i++;
          continue;
        }
        this.partial = null;
        yield { kind: 'literal', raw: p.raw };
      }
      i++;
      if (ch === '"') this.partial = { kind: 'string', raw: '', escaped: false };
      else if ('{}[]:,'.includes(ch)) yield { kind: 'punct', char: ch };
      else if (/[\w.+-]/.test(ch)) this.partial = { kind: 'literal', raw: ch, escaped: false };
      else if (!/\s/.test(ch)) throw new Error(`unexpected character ${JSON.stringify(ch)}`);
    }
  }

  finish(): Generator<Token> {
    const p = this.partial;
    this.partial = null;
    if (p?.kind === 'string') throw new Error('the answer ends inside a string');
    return (function* () {
      if (p) yield { kind: 'literal', raw: p.raw } as Token;
    })();
  }
}

type State = 'start' | 'key' | 'colon' | 'value' | 'users-first' | 'users-item' | 'users-next' | 'after-value' | 'skip' | 'end';

export interface UsersAnswerEnd {
  timestamp?: string;
  error?: string;
}

export class UsersStreamParser {
  private readonly tokenizer = new Tokenizer();
  private state: State = 'start';
  private key = '';
  private skipDepth = 0;
  private count = 0;
  private sawUsers = false;
  readonly end: UsersAnswerEnd = {};

  /** Feeds a chunk of text; answers the ids it completed. */
  push(chunk: string): string[] {
    const ids: string[] = [];
    for (const token of this.tokenizer.tokens(chunk)) this.take(token, ids);
    return ids;
  }

  /** Call after the last chunk; throws when the answer was cut short or had no users array. */
  finish(): UsersAnswerEnd {
    const ids: string[] = [];
    for (const token of this.tokenizer.finish()) this.take(token, ids);
    if (this.state !== 'end' && this.end.error === undefined) throw new Error('the answer ends before its closing }');
    if (!this.sawUsers && this.end.error === undefined) throw new Error('users: is required');
    return this.end;
  }

  private take(t: Token, ids: string[]): void {
    const punct = t.kind === 'punct' ? t.char : null;
    switch (this.state) {
      case 'start':
        if (punct !== '{') throw new Error('the answer must be a JSON object');
        this.state = 'key';
        return;
      case 'key':
        if (punct === '}') return void (this.state = 'end');
        if (t.kind !== 'string') throw new Error('expected a key');
        this.key = t.value;
        this.state = 'colon';
        return;
      case 'colon':
        if (punct !== ':') throw new Error(`expected : after "${this.key}"`);
        this.state = 'value';
        return;
      case 'value':
        return this.takeValue(t, punct);
      case 'users-first':
      case 'users-item':
        if (punct === ']' && this.state === 'users-first') return void (this.state = 'after-value');
        if (t.kind !== 'string') throw new Error(`users[${this.count}]: must be a string`);
        ids.push(t.value);
        this.count++;
        this.state = 'users-next';
        return;
      case 'users-next':
        if (punct === ',') return void (this.state = 'users-item');
        if (punct === ']') return void (this.state = 'after-value');
        throw new Error(`users: expected , or ] after item ${this.count - 1}`);
      case 'skip':
        if (punct === '{' || punct === '[') this.skipDepth++;
        else if (punct === '}' || punct === ']') this.skipDepth--;
        if (this.skipDepth === 0) this.state = 'after-value';
        return;
      case 'after-value':
        if (punct === ',') return void (this.state = 'key');
        if (punct === '}') return void (this.state = 'end');
        throw new Error(`expected , or } after "${this.key}"`);
      case 'end':
        throw new Error('unexpected data after the closing }');
    }
  }

  private takeValue(t: Token, punct: string | null): void {
    if (this.key === 'users') {
      if (punct !== '[') throw new Error('users: must be an array of strings');
      this.sawUsers = true;
      this.state = 'users-first';
      return;
    }
    if (this.key === 'timestamp' || this.key === 'error') {
      if (t.kind !== 'string') throw new Error(`${this.key}: must be a string`);
      this.end[this.key] = t.value;
      this.state = 'after-value';
      return;
    }
    if (punct === '{' || punct === '[') {
      this.skipDepth = 1;
      this.state = 'skip';
    } else if (t.kind === 'punct') throw new Error(`"${this.key}": expected a value`);
    else this.state = 'after-value';
  }
}
