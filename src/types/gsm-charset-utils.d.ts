// The package ships no type declarations; these describe the parts we use (lib/SmsUtil.js, v1.0.x).
declare module '@trt2/gsm-charset-utils/lib/SmsUtil.js' {
  export interface CharCount {
    charCount: number;
    msgCount: number;
    charsPerSegment: number;
  }
  export function getSmsCharCountInfo(text: string): {
    isGsmEncoding: boolean;
    gsmCharCount: CharCount;
    ucs2CharCount: CharCount;
  };
  export function isGsmChar(c: string): boolean;
  export function isGsmString(text: string): boolean;
}
declare module '@trt2/gsm-charset-utils' {
  export function removeNonGsmChars(text: string, replacementChar?: string): string;
  export function isGsmChar(c: string): boolean;
}
