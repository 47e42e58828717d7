# NATS JetStream cluster for sandrun: three servers on three hosts.
#
#   nomad job run deploy/nomad/nats.nomad.hcl
#
# Prerequisites (docs/deploy.md walks through them):
#   * a host volume "nats-jetstream" on exactly three client nodes, e.g.
#       client { host_volume "nats-jetstream" { path = "/srv/nats" read_only = false } }
#     The JetStream store lives there and outlives allocations.
#   * client max_kill_timeout >= 60s (the default, 30s, would cut lame-duck
#     mode short: see kill_timeout below).
#   * the Nomad variable nomad/jobs/nats with the operator and account JWTs
#     and the route credentials (keys below). Nothing secret is in this file.
#
# Server identity: server_name is "nats-" + the Nomad node's unique name, so
# a name always belongs to the JetStream data on that host's volume (an
# allocation index could move to another host and meet a different store).
# Static ports and distinct_hosts keep one server per host.

variable "datacenters" {
  description = "Datacenters the NATS servers may run in."
  type        = list(string)
  default     = ["dc1"]
}

variable "image" {
  description = "NATS server image (2.12 or later; keep all three on one version)."
  type        = string
  default     = "nats:2.12-alpine"
}

variable "exporter_image" {
  description = "prometheus-nats-exporter image: nats-server has no Prometheus endpoint of its own."
  type        = string
  default     = "natsio/prometheus-nats-exporter:0.16.0"
}

variable "max_file_store" {
  description = "JetStream file storage limit per server (NATS size syntax)."
  type        = string
  default     = "100GB"
}

variable "max_memory_store" {
  description = "JetStream memory storage limit per server."
  type        = string
  default     = "1GB"
}

job "nats" {
  datacenters = var.datacenters
  type        = "service"

  # One server at a time; the next only after the restarted one reports
  # /healthz ok, i.e. it has caught up with the meta group and every stream.
  update {
    max_parallel      = 1
    health_check      = "checks"
    min_healthy_time  = "30s"
    healthy_deadline  = "10m"
    progress_deadline = "15m"
    auto_revert       = false
  }

  group "nats" {
    count = 3

    constraint {
      distinct_hosts = true
    }

    volume "jetstream" {
      type      = "host"
      source    = "nats-jetstream"
      read_only = false
    }

    network {
      port "client" {
        static = 4222
      }
      port "cluster" {
        static = 6222
      }
      # The monitoring endpoints need no credentials: they are published
      # only on the clients' "private" host network (client config:
      # host_network "private" { cidr = "..." }), never on every interface.
      port "monitor" {
        static       = 8222
        host_network = "private"
      }
      port "exporter" {
        to = 7777
      }
    }

    # Group services are registered before the tasks start, so the servers
    # find each other's route addresses as soon as possible.
    service {
      name     = "nats"
      provider = "nomad"
      port     = "client"
      tags     = ["nats", "client"]

      # Full /healthz: ok once this server's JetStream is current (meta
      # group, streams, consumers). It gates the rolling update above.
      check {
        name     = "nats-healthz"
        type     = "http"
        port     = "monitor"
        path     = "/healthz"
        interval = "10s"
        timeout  = "3s"
      }
    }

    service {
      name     = "nats-cluster"
      provider = "nomad"
      port     = "cluster"
      tags     = ["nats", "route"]

      check {
        name     = "nats-cluster-tcp"
        type     = "tcp"
        port     = "cluster"
        interval = "10s"
        timeout  = "2s"
      }
    }

    # The monitoring endpoint serves JSON (varz, jsz, healthz, ...), not the
    # Prometheus format: Prometheus scrapes the exporter below instead.
    service {
      name     = "nats-monitor"
      provider = "nomad"
      port     = "monitor"
      tags     = ["nats", "monitor"]
    }

    service {
      name     = "nats-exporter"
      provider = "nomad"
      port     = "exporter"
      tags     = ["nats", "prometheus"]

      check {
        name     = "nats-exporter-http"
        type     = "http"
        path     = "/metrics"
        interval = "30s"
        timeout  = "5s"
      }
    }

    task "nats" {
      driver = "docker"

      config {
        image = var.image
        # The image's entrypoint execs nats-server with these arguments, so
        # nats-server is PID 1 and receives kill_signal itself.
        args  = ["--config", "/secrets/nats.conf"]
        ports = ["client", "cluster", "monitor"]
      }

      volume_mount {
        volume      = "jetstream"
        destination = "/data"
        read_only   = false
      }

      # SIGUSR2 puts nats-server into lame-duck mode (nats-server --signal
      # ldm sends the same signal): it stops accepting clients, hands its
      # JetStream/Raft leaderships to the other servers, waits
      # lame_duck_grace_period, closes its clients spread over the rest of
      # lame_duck_duration and then shuts down and exits by itself. SIGTERM
      # would shut down at once (and is ignored once lame-duck mode has
      # started). kill_timeout must exceed lame_duck_duration (30s below)
      # plus the JetStream shutdown; Nomad sends SIGKILL after it.
      kill_signal  = "SIGUSR2"
      kill_timeout = "45s"

      # nats.conf holds the route password, so it is rendered into secrets/
      # (in-memory, private to this task). The operator JWT, the account
      # JWTs and the route credentials come from the Nomad variable
      # nomad/jobs/nats; route addresses come from Nomad service discovery.
      # A change (a server joining, a rotated JWT) re-renders the file and
      # SIGHUP makes nats-server reload it: routes are reloadable. A missing
      # item of the variable fails the render instead of leaving it empty.
      template {
        destination          = "secrets/nats.conf"
        perms                = "0400"
        change_mode          = "signal"
        change_signal        = "SIGHUP"
        error_on_missing_key = true
        data                 = <<EOH
{{- with nomadVar "nomad/jobs/nats" }}
{{- $route_user := .route_user }}
{{- $route_password := .route_password }}
server_name: "nats-{{ env "node.unique.name" }}"
listen: 0.0.0.0:4222
client_advertise: "{{ env "NOMAD_ADDR_client" }}"
http: 0.0.0.0:8222

# Clients over TLS; they authenticate with their user JWT (below).
tls {
  cert_file: "{{ env "NOMAD_SECRETS_DIR" }}/tls/server.pem"
  key_file: "{{ env "NOMAD_SECRETS_DIR" }}/tls/server-key.pem"
  ca_file: "{{ env "NOMAD_SECRETS_DIR" }}/tls/ca.pem"
  timeout: 2
}

# Lame duck: see kill_signal in the job file.
lame_duck_duration: 30s
lame_duck_grace_period: 10s

jetstream {
  store_dir: /data
  max_file_store: ${var.max_file_store}
  max_memory_store: ${var.max_memory_store}
}

# Decentralized auth: clients (sandrun --creds) present a user JWT signed by
# an account key; the account JWTs are preloaded here.
operator: "{{ .operator_jwt }}"
system_account: "{{ .system_account }}"
resolver: MEMORY
resolver_preload: {
  "{{ .system_account }}": "{{ .system_account_jwt }}"
  "{{ .sandrun_account }}": "{{ .sandrun_account_jwt }}"
}

cluster {
  name: sandrun
  listen: 0.0.0.0:6222
  advertise: "{{ env "NOMAD_ADDR_cluster" }}"
  authorization {
    user: "{{ $route_user }}"
    password: "{{ $route_password }}"
    timeout: 2
  }
  # Routes over mutual TLS: every server's certificate signed by the CA.
  tls {
    cert_file: "{{ env "NOMAD_SECRETS_DIR" }}/tls/server.pem"
    key_file: "{{ env "NOMAD_SECRETS_DIR" }}/tls/server-key.pem"
    ca_file: "{{ env "NOMAD_SECRETS_DIR" }}/tls/ca.pem"
    verify: true
    timeout: 2
  }
  # Every registered server, this one included (nats-server ignores a route
  # to itself). Servers also gossip the routes they know.
  routes: [
{{- range nomadService "nats-cluster" }}
    "nats-route://{{ $route_user }}:{{ $route_password }}@{{ .Address }}:{{ .Port }}"
{{- end }}
  ]
}
{{- end }}
EOH
      }

      # The servers' TLS material, from the same variable: a CA, and a
      # certificate valid for every server's address (clients and routes).
      template {
        destination          = "secrets/tls/ca.pem"
        perms                = "0400"
        change_mode          = "signal"
        change_signal        = "SIGHUP"
        error_on_missing_key = true
        data                 = "{{ with nomadVar \"nomad/jobs/nats\" }}{{ .tls_ca }}{{ end }}"
      }
      template {
        destination          = "secrets/tls/server.pem"
        perms                = "0400"
        change_mode          = "signal"
        change_signal        = "SIGHUP"
        error_on_missing_key = true
        data                 = "{{ with nomadVar \"nomad/jobs/nats\" }}{{ .tls_cert }}{{ end }}"
      }
      template {
        destination          = "secrets/tls/server-key.pem"
        perms                = "0400"
        change_mode          = "signal"
        change_signal        = "SIGHUP"
        error_on_missing_key = true
        data                 = "{{ with nomadVar \"nomad/jobs/nats\" }}{{ .tls_key }}{{ end }}"
      }

      resources {
        cpu    = 1000
        memory = 2048
      }
    }

    # Turns the JSON monitoring endpoints into Prometheus metrics
    # (gnatsd_varz_*, jetstream_*), served on /metrics.
    task "exporter" {
      driver = "docker"

      lifecycle {
        hook    = "poststart"
        sidecar = true
      }

      config {
        image = var.exporter_image
        args = [
          "-port", "7777",
          "-varz", "-connz", "-routez", "-healthz", "-jsz=all",
          "http://${NOMAD_ADDR_monitor}",
        ]
        ports = ["exporter"]
      }

      resources {
        cpu    = 100
        memory = 128
      }
    }
  }
}
