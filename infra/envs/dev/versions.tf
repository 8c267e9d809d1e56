terraform {
  required_version = ">= 1.9"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.0"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.6"
    }
    archive = {
      source  = "hashicorp/archive"
      version = "~> 2.4"
    }
  }

  # State in a GCS bucket created beforehand (see docs/deployment.md):
  # terraform init -backend-config="bucket=PROJECT-tfstate" -backend-config="prefix=core/dev"
  backend "gcs" {}
}

provider "google" {
  project = var.project_id
  region  = var.region
}
