import net from 'node:net';

/** Forwards a local port to a server; stopping it makes that server unreachable for whoever connects through it. */
export class TcpProxy {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  /** A proxy to the host and port of a postgres:// or redis:// URL. */
  static to(url: string, defaultPort: number): TcpProxy {
    const { hostname, port } = new URL(url);
    return new TcpProxy({ host: hostname, port: Number(port || defaultPort) });
  }

  /** `url` with its host and port replaced by the proxy's. */
  url(url: string): string {
    const viaProxy = new URL(url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(this.port);
    return viaProxy.toString();
  }

  async start(port = this.port): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => (socket === client ? upstream : client).destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** Keeps every connection open but forwards nothing more: a command sent now is never answered. */
  hold(): void {
    for (const socket of this.sockets) {
      socket.unpipe();
      socket.pause();
    }
  }

  /** Drops every connection and refuses new ones until the next start. */
  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
