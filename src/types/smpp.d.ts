// The `smpp` package (0.5.x) ships no type declarations; these describe the parts we use (lib/smpp.js, lib/pdu.js).
declare module 'smpp' {
  import type { EventEmitter } from 'node:events';
  import type { Server as NetServer, Socket } from 'node:net';
  import type { ConnectionOptions } from 'node:tls';

  namespace smpp {
    /** A decoded PDU: header fields plus its mandatory parameters and TLVs by name (unknown TLVs by numeric tag). */
    interface PDU {
      command: string;
      command_id: number;
      command_status: number;
      sequence_number: number;
      [field: string]: unknown;
      isResponse(): boolean;
      response(options?: Record<string, unknown>): PDU;
    }
    type PduCallback = (pdu: PDU) => void;
    interface SessionOptions extends ConnectionOptions {
      host?: string;
      port?: number;
      tls?: boolean;
      /** With the client's auto_enquire_link_period the library sends enquire_link itself (unused: we time it). */
      auto_enquire_link_period?: number;
    }
    class Session extends EventEmitter {
      socket: Socket;
      server?: Server;
      send(pdu: PDU, responseCallback?: PduCallback, sendCallback?: PduCallback): boolean;
      close(callback?: () => void): void;
      destroy(callback?: () => void): void;
      pause(): void;
      resume(): void;
      bind_transceiver(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      submit_sm(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      deliver_sm(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      enquire_link(options?: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      unbind(options?: Record<string, unknown>, responseCallback?: PduCallback): boolean;
    }
    class Server extends NetServer {
      sessions: Session[];
    }
    const PDU: {
      new (command: string, options?: Record<string, unknown>): PDU;
      maxLength: number;
    };
    function connect(options: SessionOptions, listener?: () => void): Session;
    function createServer(options: Record<string, unknown>, listener?: (session: Session) => void): Server;
    const errors: Readonly<Record<string, number>>;
  }
  export = smpp;
}
