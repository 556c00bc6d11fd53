/** What an inbound text asks for: sms.opt_out_keywords and sms.opt_in_keywords, matched trimmed and in any case. */
export type KeywordAction = 'opt_out' | 'opt_in';

export interface KeywordLists {
  optOut: readonly string[];
  optIn: readonly string[];
}

/**
 * The whole text must be the keyword ("STOP", " stop "), as carriers and Twilio match them: "please stop the
 * bonus mails" is a message, not an opt-out. Lists are upper case (config/schema.ts); the config refuses a word in both.
 */
export function keywordAction(text: string, lists: KeywordLists): KeywordAction | null {
  const word = text.trim().toUpperCase();
  if (word === '') return null;
  if (lists.optOut.includes(word)) return 'opt_out';
  if (lists.optIn.includes(word)) return 'opt_in';
  return null;
}
