# Cloud SQL for PostgreSQL. pgvector ships with Cloud SQL; the schema's
# `CREATE EXTENSION vector` (npm run db:apply) enables it, which the built-in user may do.
# The services reach the private IP through the VPC connector; Cloud Build reaches the
# instance through the Cloud SQL Auth Proxy (IAM-authorized, see ip_configuration).

resource "random_password" "app" {
  length  = 32
  special = false # keeps DATABASE_URL free of characters that need URL escaping
}

resource "google_sql_database_instance" "this" {
  project             = var.project_id
  name                = var.instance_name
  region              = var.region
  database_version    = var.database_version
  deletion_protection = var.deletion_protection

  settings {
    edition           = "ENTERPRISE"
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

    # Budget: the sum over api, sweep and live of max instances x DB_POOL_MAX stays below this
    # (test/infra.test.ts checks the defaults and the dev environment).
    database_flags {
      name  = "max_connections"
      value = tostring(var.max_connections)
    }
  }
}

resource "google_sql_database" "app" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = var.database_name
}

resource "google_sql_user" "app" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = var.user_name
  password = random_password.app.result
}

# The services read DATABASE_URL from Secret Manager. The server certificate names the
# instance, not its private IP, so full verification cannot succeed on the IP: the link is
# encrypted (the instance refuses plaintext) and stays inside the VPC.
resource "google_secret_manager_secret_version" "database_url" {
  secret      = var.database_url_secret_id
  secret_data = "postgresql://${google_sql_user.app.name}:${random_password.app.result}@${google_sql_database_instance.this.private_ip_address}:5432/${google_sql_database.app.name}?sslmode=no-verify"
}
