package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"leadpipe/internal/app"
	"leadpipe/internal/config"
	"leadpipe/internal/tenants"
)

// adminCommand runs the operator subcommands (the same operations as the
// admin API, for people with shell access).
func adminCommand(ctx context.Context, cfg *config.Config, log *slog.Logger, noun string, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s: missing verb (see `server help`)", noun)
	}
	verb, args := args[0], args[1:]
	fs := flag.NewFlagSet(noun+" "+verb, flag.ContinueOnError)
	fs.SetOutput(stdout)
	slug := fs.String("slug", "", "tenant slug")
	tenantSlug := fs.String("tenant", "", "tenant slug")
	name := fs.String("name", "", "name")
	email := fs.String("email", "", "user email")
	adminEmail := fs.String("admin-email", "", "first admin's email")
	adminPassword := fs.String("admin-password", "", "first admin's password")
	password := fs.String("password", "", "user password")
	role := fs.String("role", tenants.RoleStaff, "admin or staff")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	tenantID := func() (string, error) {
		t, err := a.Tenants.TenantBySlug(ctx, *tenantSlug)
		if err != nil {
			return "", fmt.Errorf("tenant %q: %w", *tenantSlug, err)
		}
		return t.ID, nil
	}
	switch noun + " " + verb {
	case "tenant create":
		p, err := a.Tenants.Provision(ctx, tenants.ProvisionInput{Slug: *slug, Name: *name, AdminEmail: *adminEmail, AdminPassword: *adminPassword})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tenant %s (%s) created\nadmin login: %s\nAPI token (shown once): %s\n", p.Tenant.Slug, p.Tenant.ID, p.Admin.Email, p.APIToken)
	case "tenant list":
		ts, err := a.Tenants.Tenants(ctx)
		if err != nil {
			return err
		}
		for _, t := range ts {
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", t.ID, t.Slug, t.Name)
		}
	case "user create":
		id, err := tenantID()
		if err != nil {
			return err
		}
		u, err := a.Tenants.CreateUser(ctx, id, tenants.CreateUserInput{Email: *email, Name: *name, Password: *password, Role: *role})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %s (%s) created with role %s\n", u.Email, u.ID, u.Role)
	case "token create":
		id, err := tenantID()
		if err != nil {
			return err
		}
		_, plain, err := a.Tenants.CreateToken(ctx, id, *name, nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "API token (shown once): %s\n", plain)
	default:
		return fmt.Errorf("unknown command %q (see `server help`)", noun+" "+verb)
	}
	return nil
}
