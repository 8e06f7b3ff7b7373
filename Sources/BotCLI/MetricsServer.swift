import HTTPServer

/// Prometheus scraping: `GET /metrics` answers with the text `render` returns, everything else
/// 404 (on pubbot's small HTTP server; the CLI binds it to loopback unless told otherwise).
final class MetricsServer: @unchecked Sendable {
    let server: HTTPServer
    public var port: Int { server.port }

    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// - Parameters:
    ///   - host: a numeric IPv4 address (e.g. 127.0.0.1; 0.0.0.0 only when asked for).
    public init(host: String, port: Int, render: @escaping @Sendable () -> String) throws(StartError) {
        do {
            server = try HTTPServer(host: host, port: port, name: "pubbot-metrics") { r in
                guard r.path == "/metrics" else { return HTTPResponse(status: 404, text: "not found; try /metrics\n") }
                guard r.method == "GET" else {
                    return HTTPResponse(status: 405, headers: [("Allow", "GET")], body: Array("GET /metrics\n".utf8))
                }
                return HTTPResponse(
                    status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(render().utf8))
            }
        } catch {
            throw StartError(description: "--metrics: \(error.description)")
        }
    }

    public func stop() { server.stop() }
}
