# Cloud SQL for PostgreSQL. pgvector ships with Cloud SQL; the schema's
# `CREATE EXTENSION vector` (npm run db:apply) enables it, which the built-in user may do.
# The services reach the private IP through the VPC connector; Cloud Build reaches the
# instance through the Cloud SQL Auth Proxy (IAM-authorized, see ip_configuration).
#
# Roles (docs/architecture.md): the built-in user mi_owner owns the schema and is used only by
# the migration step (its URL is the DATABASE_OWNER_URL secret, which no runtime unit reads).
# Each runtime unit logs in as its own service account (Cloud SQL IAM database authentication:
# no password, a short-lived token); db:apply grants it the unit's group role (mi_api, mi_live,
# mi_sweep) through DB_RUNTIME_LOGINS (cloudbuild.yaml).

locals {
  # Managed connection pooling (the connections module) serves pooled connections on 6432.
  port = var.pooling.enabled ? 6432 : 5432
  # A service account's database user is its email without ".gserviceaccount.com".
  runtime_logins = { for unit, email in var.runtime_accounts : unit => trimsuffix(email, ".gserviceaccount.com") }
}

resource "random_password" "owner" {
  length  = 32
  special = false # keeps DATABASE_OWNER_URL free of characters that need URL escaping
}

resource "google_sql_database_instance" "this" {
  project             = var.project_id
  name                = var.instance_name
  region              = var.region
  database_version    = var.database_version
  deletion_protection = var.deletion_protection

  settings {
    # Enterprise Plus tiers are db-perf-optimized-N-*; managed connection pooling needs them.
    edition           = startswith(var.tier, "db-perf-optimized-N-") ? "ENTERPRISE_PLUS" : "ENTERPRISE"
    tier              = var.tier
    availability_type = var.availability_type
    disk_type         = "PD_SSD"
    disk_size         = var.disk_size_gb
    disk_autoresize   = true

    ip_configuration {
      # The public address accepts no networks, so only the Auth Proxy and connectors
      # (IAM-authorized, TLS) get through it; Cloud Build's schema step uses it.
      ipv4_enabled                                  = var.public_ip_for_proxy
      private_network                               = var.network_id
      enable_private_path_for_google_cloud_services = true
      ssl_mode                                      = "ENCRYPTED_ONLY"
    }

    backup_configuration {
      enabled                        = true
      start_time                     = var.backup_start_time
      point_in_time_recovery_enabled = true
      transaction_log_retention_days = var.transaction_log_retention_days

      backup_retention_settings {
        retained_backups = var.retained_backups
        retention_unit   = "COUNT"
      }
    }

    maintenance_window {
      day          = 7 # Sunday
      hour         = 3
      update_track = "stable"
    }

    insights_config {
      query_insights_enabled = true
    }

    # From the connection budget (modules/connections), which checks the units fit under it.
    database_flags {
      name  = "max_connections"
      value = tostring(var.max_connections)
    }

    # The runtime units log in as their service accounts.
    database_flags {
      name  = "cloudsql.iam_authentication"
      value = "on"
    }

    # Transaction pooling: a server connection is the client's for one transaction, so
    # transaction-local settings (set_config(..., true), SET LOCAL) hold and session state does not.
    dynamic "connection_pool_config" {
      for_each = var.pooling.enabled ? [1] : []
      content {
        connection_pooling_enabled = true
        flags {
          name  = "pool_mode"
          value = "transaction"
        }
        flags {
          name  = "max_pool_size"
          value = tostring(var.pooling.max_pool_size)
        }
      }
    }
  }
}

resource "google_sql_database" "app" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = var.database_name
}

# The schema owner: the migration step's user, never a runtime unit's.
resource "google_sql_user" "owner" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = var.owner_name
  password = random_password.owner.result
}

resource "google_sql_user" "runtime" {
  for_each = local.runtime_logins

  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = each.value
  type     = "CLOUD_IAM_SERVICE_ACCOUNT"
}

# The migration step reads DATABASE_OWNER_URL from Secret Manager. The server certificate names
# the instance, not its private IP, so full verification cannot succeed on the IP: the link is
# encrypted (the instance refuses plaintext) and stays inside the VPC.
resource "google_secret_manager_secret_version" "owner_url" {
  secret      = var.owner_url_secret_id
  secret_data = "postgresql://${google_sql_user.owner.name}:${random_password.owner.result}@${google_sql_database_instance.this.private_ip_address}:5432/${google_sql_database.app.name}?sslmode=no-verify"
}
