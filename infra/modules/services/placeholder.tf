# Terraform creates the units before any build exists, so their first revision runs a
# placeholder (the functions answer 503 everywhere, /healthz included; the live service runs
# var.live_image, by default Google's sample container). Cloud Build then deploys the real
# code; Terraform ignores the deployed source and image (see lifecycle blocks) and keeps
# owning everything else.

data "archive_file" "placeholder" {
  type        = "zip"
  output_path = "${path.root}/.terraform/placeholder-functions.zip"

  source {
    filename = "index.js"
    content  = <<-EOT
      const notDeployed = (req, res) => res.status(503).send('not deployed yet');
      exports.api = notDeployed;
      exports.sweep = notDeployed;
    EOT
  }

  source {
    filename = "package.json"
    content = jsonencode({
      name         = "placeholder"
      version      = "0.0.0"
      main         = "index.js"
      dependencies = { "@google-cloud/functions-framework" = "^3.4.0" }
    })
  }
}

resource "google_storage_bucket_object" "placeholder" {
  bucket = var.source_bucket
  name   = "bootstrap/placeholder-${data.archive_file.placeholder.output_md5}.zip"
  source = data.archive_file.placeholder.output_path
}
