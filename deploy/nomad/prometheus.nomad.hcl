# Prometheus for sandrun: finds its targets through Nomad service discovery.
#
#   nomad job run deploy/nomad/prometheus.nomad.hcl
#   nomad job run -var "alert_rules=$(cat deploy/prometheus/sandrun-rules.yml)" \
#     deploy/nomad/prometheus.nomad.hcl
#
# Scraped: every Nomad service tagged "prometheus" — sandrun-worker and
# sandrun-scheduler (/metrics on their "metrics" port, 9464 in the task) and
# nats-exporter (the NATS servers' monitoring endpoints, nats-monitor, turned
# into Prometheus metrics by the exporter sidecar of the nats job).
#
# Alert rules: deploy/prometheus/sandrun-rules.yml, passed in with
# -var alert_rules=... as above and rendered to /local/rules/. Grafana
# dashboards for these metrics are in dashboards/ (docs/metrics.md lists every
# sandrun metric).
#
# Prometheus reads the Nomad service catalogue with this task's workload
# identity (identity { file = true } writes it to secrets/nomad_token), which
# may read the services of its own namespace: run it in the namespace of the
# sandrun and nats jobs.

variable "datacenters" {
  description = "Datacenters Prometheus may run in."
  type        = list(string)
  default     = ["dc1"]
}

variable "image" {
  description = "Prometheus image."
  type        = string
  default     = "prom/prometheus:v3.5.0"
}

variable "retention" {
  description = "How long Prometheus keeps samples."
  type        = string
  default     = "15d"
}

variable "alert_rules" {
  description = "Contents of a Prometheus rules file (deploy/prometheus/sandrun-rules.yml)."
  type        = string
  default     = "groups: []\n"
}

job "prometheus" {
  datacenters = var.datacenters
  type        = "service"

  group "prometheus" {
    count = 1

    network {
      port "http" {
        to = 9090
      }
    }

    # The TSDB lives in the allocation's data directory; sticky + migrate
    # keep it across job updates.
    ephemeral_disk {
      size    = 10240
      sticky  = true
      migrate = true
    }

    service {
      name     = "prometheus"
      provider = "nomad"
      port     = "http"
      tags     = ["prometheus"]

      check {
        name     = "prometheus-ready"
        type     = "http"
        path     = "/-/ready"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "prometheus" {
      driver = "docker"

      identity {
        file = true
      }

      config {
        image = var.image
        args = [
          "--config.file=/local/prometheus.yml",
          "--storage.tsdb.path=/alloc/data/prometheus",
          "--storage.tsdb.retention.time=${var.retention}",
          "--web.listen-address=0.0.0.0:9090",
        ]
        ports = ["http"]
      }

      template {
        destination   = "local/prometheus.yml"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        data          = <<EOH
global:
  scrape_interval: 15s
  evaluation_interval: 15s

rule_files:
  - /local/rules/*.yml

scrape_configs:
  # Every Nomad service tagged "prometheus": sandrun-worker,
  # sandrun-scheduler, nats-exporter, and this Prometheus.
  - job_name: nomad-services
    nomad_sd_configs:
      - server: "http://{{ env "attr.unique.network.ip-address" }}:4646"
        namespace: "{{ env "NOMAD_NAMESPACE" }}"
        authorization:
          credentials_file: /secrets/nomad_token
    relabel_configs:
      - source_labels: [__meta_nomad_tags]
        regex: ".*,prometheus,.*"
        action: keep
      - source_labels: [__meta_nomad_service]
        target_label: job
      - source_labels: [__meta_nomad_service]
        target_label: service
      - source_labels: [__meta_nomad_dc]
        target_label: datacenter
      - source_labels: [__meta_nomad_node_id]
        target_label: nomad_node
      - source_labels: [__meta_nomad_tags]
        regex: ".*,(docker|hpc),.*"
        target_label: worker_class
EOH
      }

      # Alerting rules. Their annotations use Prometheus' own {{ }}
      # templates, so this template renders with other delimiters and
      # leaves them alone.
      template {
        destination     = "local/rules/sandrun-rules.yml"
        change_mode     = "signal"
        change_signal   = "SIGHUP"
        left_delimiter  = "[["
        right_delimiter = "]]"
        data            = var.alert_rules
      }

      resources {
        cpu    = 500
        memory = 1024
      }
    }
  }
}
